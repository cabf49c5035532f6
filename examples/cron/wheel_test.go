package main

import (
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// testTick is the tick of the tests' timers: a run starts within a tick
// after its time.
const testTick = 100 * time.Millisecond

// monday is where the tests' fake clocks start: Monday 2 March 2026,
// midnight UTC.
var monday = time.Date(2026, time.March, 2, 0, 0, 0, 0, time.UTC)

// newFakeTimer returns a timer on a fake clock that reads monday, stopped
// when the test ends.
func newFakeTimer(t *testing.T) (*hashedwheel.HashedWheelTimer, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(monday)
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake), hashedwheel.WithTickDuration(testTick))
	require.NoError(t, err)
	t.Cleanup(func() { timer.Stop() })
	return timer, fake
}

// recorder is a job that notes the fake time of each of its runs.
type recorder struct {
	fake *clock.Fake
	mu   sync.Mutex
	at   []time.Time
}

func (r *recorder) run() {
	now := r.fake.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, now)
}

func (r *recorder) runs() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at...)
}

// assertRanAt checks that each run started at its time or within a tick
// after it, never before.
func assertRanAt(t *testing.T, due, ran []time.Time) {
	t.Helper()
	require.Len(t, ran, len(due))
	for i := range due {
		late := ran[i].Sub(due[i])
		assert.True(t, late >= 0 && late <= testTick, "run %d due at %v ran at %v", i, due[i], ran[i])
	}
}

// businessQuarters returns the times of "*/15 9-17 * * MON-FRI" in loc,
// after from and before to, computed without the cron package.
func businessQuarters(loc *time.Location, from, to time.Time) []time.Time {
	var times []time.Time
	day := from.In(loc)
	for d := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc); d.Before(to); d = d.AddDate(0, 0, 1) {
		if d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
			continue
		}
		for h := 9; h <= 17; h++ {
			for m := 0; m < 60; m += 15 {
				if at := time.Date(d.Year(), d.Month(), d.Day(), h, m, 0, 0, loc); at.After(from) && at.Before(to) {
					times = append(times, at)
				}
			}
		}
	}
	return times
}

// TestCronRunsAtItsTimesOnTheWheel: the cache refresh of the program runs
// at every time of its cron expression over a week, never before it and
// within a tick after, and at no other time; in UTC and in Asia/Tokyo
// (no daylight saving time), on a clock whose own zone is UTC.
func TestCronRunsAtItsTimesOnTheWheel(t *testing.T) {
	for _, zone := range []string{"UTC", "Asia/Tokyo"} {
		t.Run(zone, func(t *testing.T) {
			loc := mustLoad(t, zone)
			timer, fake := newFakeTimer(t)
			cache := newPriceCache(fake.Now)
			s, err := parseSchedule("*/15 9-17 * * MON-FRI", loc)
			require.NoError(t, err)
			refresh, err := timer.ScheduleFunc(s, cache.Refresh)
			require.NoError(t, err)

			end := monday.AddDate(0, 0, 7)
			due := businessQuarters(loc, monday, end)
			require.Len(t, due, 5*36-map[string]int{"UTC": 0, "Asia/Tokyo": 1}[zone], "Monday 09:00 in Tokyo is the start itself")
			for i, at := range due {
				fake.Advance(at.Sub(fake.Now()) - time.Nanosecond)
				n, _ := cache.Loads()
				require.Equal(t, i, n, "a run before %v", at)
				fake.Advance(time.Nanosecond + testTick)
				n, last := cache.Loads()
				require.Equal(t, i+1, n, "the run due at %v", at)
				late := last.Sub(at)
				require.True(t, late >= 0 && late <= testTick, "due at %v, ran at %v", at, last)
			}
			fake.Advance(end.Sub(fake.Now()) - time.Nanosecond) // a run due at end runs at end
			n, _ := cache.Loads()
			assert.Equal(t, len(due), n, "no run outside business hours")
			nextMonday := end.Add(map[string]time.Duration{"UTC": 9 * time.Hour, "Asia/Tokyo": 0}[zone]) // 09:00 there
			assert.True(t, refresh.Deadline().Equal(nextMonday), "next run at %v", refresh.Deadline())
			s2 := timer.Stats()
			assert.Equal(t, uint64(len(due)), s2.PeriodicRuns)
			assert.Zero(t, s2.PeriodicSkipped)
			assert.Zero(t, s2.ScheduleErrors)
		})
	}
}

// TestLimitRunsEndsTheScheduleOnTheWheel: a cron schedule limited to three
// runs runs on the first three of its times, then its timeout is expired,
// no longer pending, and Stop has nothing to return.
func TestLimitRunsEndsTheScheduleOnTheWheel(t *testing.T) {
	timer, fake := newFakeTimer(t)
	s, err := parseSchedule("0 10 * * MON-FRI", time.UTC)
	require.NoError(t, err)
	limit := limitRuns(s, 3)
	job := &recorder{fake: fake}
	reminders, err := timer.ScheduleFunc(limit, job.run)
	require.NoError(t, err)
	fake.Advance(14 * 24 * time.Hour)

	assertRanAt(t, []time.Time{monday.Add(10 * time.Hour), monday.Add(34 * time.Hour), monday.Add(58 * time.Hour)}, job.runs())
	assert.True(t, reminders.IsExpired(), "the schedule ended")
	assert.False(t, reminders.IsCancelled())
	assert.False(t, reminders.Cancel(), "nothing left to cancel")
	assert.False(t, reminders.Reset(time.Hour), "nothing left to reset")
	assert.Zero(t, limit.Left())
	stats := timer.Stats()
	assert.Zero(t, stats.Pending)
	assert.Equal(t, uint64(1), stats.Expired)
	assert.Equal(t, uint64(3), stats.PeriodicRuns)
	assert.Zero(t, stats.ScheduleErrors, "a zero Next ends the runs; it is no fault")
	assert.Empty(t, timer.Stop())
}

// TestUntilDeadlineEndsTheScheduleOnTheWheel: a cron schedule with a
// deadline runs on its times before the deadline, then its timeout is
// expired.
func TestUntilDeadlineEndsTheScheduleOnTheWheel(t *testing.T) {
	timer, fake := newFakeTimer(t)
	s, err := parseSchedule("30 8,18 * * *", time.UTC)
	require.NoError(t, err)
	job := &recorder{fake: fake}
	sale, err := timer.ScheduleFunc(untilDeadline(s, monday.Add(60*time.Hour)), job.run)
	require.NoError(t, err)
	fake.Advance(7 * 24 * time.Hour)

	var due []time.Time
	for _, h := range []float64{8.5, 18.5, 32.5, 42.5, 56.5} {
		due = append(due, monday.Add(time.Duration(h*float64(time.Hour))))
	}
	assertRanAt(t, due, job.runs())
	assert.True(t, sale.IsExpired())
	assert.Zero(t, timer.Stats().Pending)
}

// TestCronScheduleCancelResetStop: Cancel ends a cron schedule's runs;
// Reset moves its next run and the schedule goes on from there; Stop
// returns a live schedule, cancelled, and nothing runs afterwards.
func TestCronScheduleCancelResetStop(t *testing.T) {
	hourly, err := parseSchedule("0 * * * *", time.UTC)
	require.NoError(t, err)

	t.Run("Cancel", func(t *testing.T) {
		timer, fake := newFakeTimer(t)
		job := &recorder{fake: fake}
		to, err := timer.ScheduleFunc(hourly, job.run)
		require.NoError(t, err)
		fake.Advance(2*time.Hour + 30*time.Minute)
		require.True(t, to.Cancel())
		assert.False(t, to.Cancel(), "one Cancel returns true")
		fake.Advance(24 * time.Hour)
		assertRanAt(t, []time.Time{monday.Add(time.Hour), monday.Add(2 * time.Hour)}, job.runs())
		assert.True(t, to.IsCancelled())
		stats := timer.Stats()
		assert.Equal(t, uint64(1), stats.Cancelled)
		assert.Zero(t, stats.Pending)
		assert.Empty(t, timer.Stop())
	})

	t.Run("Reset", func(t *testing.T) {
		timer, fake := newFakeTimer(t)
		job := &recorder{fake: fake}
		to, err := timer.ScheduleFunc(hourly, job.run)
		require.NoError(t, err)
		fake.Advance(time.Hour + 20*time.Minute) // ran at 01:00
		require.True(t, to.Reset(2*time.Hour))   // the 02:00 and 03:00 runs give way to one at 03:20
		fake.Advance(3 * time.Hour)              // to 04:20
		assertRanAt(t, []time.Time{
			monday.Add(time.Hour), monday.Add(3*time.Hour + 20*time.Minute), monday.Add(4 * time.Hour),
		}, job.runs())
		assert.Equal(t, uint64(1), timer.Stats().Resets)
		assert.Equal(t, []hashedwheel.Timeout{to}, timer.Stop())
	})

	t.Run("Stop", func(t *testing.T) {
		timer, fake := newFakeTimer(t)
		job := &recorder{fake: fake}
		to, err := timer.ScheduleFunc(hourly, job.run)
		require.NoError(t, err)
		fake.Advance(90 * time.Minute)
		assert.Equal(t, []hashedwheel.Timeout{to}, timer.Stop())
		assert.True(t, to.IsCancelled())
		fake.Advance(24 * time.Hour)
		assertRanAt(t, []time.Time{monday.Add(time.Hour)}, job.runs())
		assert.Equal(t, uint64(1), timer.Stats().ReturnedByStop)
		_, err = timer.ScheduleFunc(hourly, job.run)
		assert.ErrorIs(t, err, hashedwheel.ErrStopped)
	})
}

// TestScheduleFuncRefusesACronExpressionNeverDue: an expression that
// parses but gives no time (30 February) is refused when scheduled, and
// nothing is scheduled.
func TestScheduleFuncRefusesACronExpressionNeverDue(t *testing.T) {
	timer, _ := newFakeTimer(t)
	s, err := parseSchedule("0 0 30 2 *", time.UTC)
	require.NoError(t, err)
	to, err := timer.ScheduleFunc(s, func() {})
	assert.Nil(t, to)
	require.ErrorIs(t, err, hashedwheel.ErrInvalidSchedule)
	assert.Contains(t, err.Error(), "expected a time after it")
	assert.Zero(t, timer.Stats().Scheduled)
}

// refreshDuringBusinessHours is the README's Schedules snippet, between
// its first line and the deferred Cancel; whileLive runs while the
// schedule is live.
func refreshDuringBusinessHours(timer *hashedwheel.HashedWheelTimer, cache *priceCache, whileLive func()) error {
	spec, err := cron.ParseStandard("CRON_TZ=Asia/Tokyo */15 9-17 * * MON-FRI")
	if err != nil {
		return err
	}
	refresh, err := timer.ScheduleFunc(spec, cache.Refresh)
	if err != nil {
		return err
	}
	defer refresh.Cancel()
	whileLive()
	return nil
}

// TestReadmeSnippet: the README's snippet refreshes the cache 36 times on
// each weekday, in Tokyo's business hours, and its deferred Cancel ends
// the schedule.
func TestReadmeSnippet(t *testing.T) {
	timer, fake := newFakeTimer(t)
	cache := newPriceCache(fake.Now)
	tokyo := mustLoad(t, "Asia/Tokyo")
	require.NoError(t, refreshDuringBusinessHours(timer, cache, func() {
		fake.Advance(7*24*time.Hour - time.Nanosecond)
	}))
	n, last := cache.Loads()
	assert.Equal(t, 5*36-1, n, "Monday 09:00 in Tokyo is the start itself")
	assert.Equal(t, "Fri 17:45", last.In(tokyo).Format("Mon 15:04"))
	fake.Advance(testTick)
	assert.Equal(t, uint64(1), timer.Stats().Cancelled)
	assert.Empty(t, timer.Stop())
}
