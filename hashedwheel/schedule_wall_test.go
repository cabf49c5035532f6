package hashedwheel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/pool"
)

// The wall clock under ScheduleFunc: a fake whose wall reading steps
// (clock.Fake.StepWall) while its monotonic reading does not.

// daily is a Scheduler of one run a day at hour:minute, UTC, as a cron
// line "minute hour * * *" gives.
func daily(hour, minute int) Scheduler {
	return schedulerFunc(func(after time.Time) time.Time {
		at := time.Date(after.Year(), after.Month(), after.Day(), hour, minute, 0, 0, time.UTC)
		if !at.After(after) {
			at = at.AddDate(0, 0, 1)
		}
		return at
	})
}

// everyMinute is a Scheduler of one run at each whole minute.
var everyMinute = schedulerFunc(func(after time.Time) time.Time { return after.Truncate(time.Minute).Add(time.Minute) })

// wallRuns schedules s on a timer of a fake clock reading start, tasks
// inline, and returns the timer, the clock, and the wall readings at the
// runs so far.
func wallRuns(t *testing.T, start time.Time, s Scheduler) (*HashedWheelTimer, *clock.Fake, Timeout, *[]time.Time) {
	t.Helper()
	fake := clock.NewFake(start)
	h := newTimerOn(t, fake, WithExecutor(pool.Inline))
	runs := &[]time.Time{}
	to, err := h.ScheduleFunc(s, func() { *runs = append(*runs, fake.Now()) })
	require.NoError(t, err)
	return h, fake, to, runs
}

// requireRanAt checks that the runs started at the wall times named, in
// order, each at its time or within two ticks after.
func requireRanAt(t *testing.T, runs []time.Time, named ...time.Time) {
	t.Helper()
	require.Len(t, runs, len(named), "runs %v, expected at %v", runs, named)
	for i, at := range named {
		require.False(t, runs[i].Before(at), "run %d at %v, before the time Next named, %v", i, runs[i], at)
		require.Less(t, runs[i].Sub(at), 2*testTick, "run %d at %v, named for %v", i, runs[i], at)
	}
}

// TestScheduleFuncWaitsForItsWallTimeAfterAStepBack: the wall clock steps
// back an hour between two runs of a schedule of whole minutes. The next
// run waits for the wall time Next named, an hour of monotonic time more,
// instead of running at the monotonic instant computed before the step.
func TestScheduleFuncWaitsForItsWallTimeAfterAStepBack(t *testing.T) {
	start := time.Date(2026, 3, 29, 2, 29, 30, 0, time.UTC)
	h, fake, _, runs := wallRuns(t, start, everyMinute)
	fake.Advance(45 * time.Second) // 02:30:15
	requireRanAt(t, *runs, start.Add(30*time.Second))
	fake.StepWall(-time.Hour) // 01:30:15
	fake.Advance(time.Hour)   // 02:30:15 again: 02:31 still to come
	requireRanAt(t, *runs, start.Add(30*time.Second))
	fake.Advance(time.Minute) // 02:31:15
	requireRanAt(t, *runs, start.Add(30*time.Second), start.Add(90*time.Second))
	assert.Zero(t, h.Stats().PeriodicSkipped)
}

// TestScheduleFuncRunsOnceAfterAStepForward: made after the wall clock
// stepped forward an hour, a daily 02:30 schedule runs at 02:30 once, not
// again at 03:30; and after a step forward of ten minutes over a schedule
// of whole minutes, the run whose time passed runs once, at the next wake,
// the others counted skipped.
func TestScheduleFuncRunsOnceAfterAStepForward(t *testing.T) {
	t.Run("daily", func(t *testing.T) {
		start := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
		fake := clock.NewFake(start)
		h := newTimerOn(t, fake, WithExecutor(pool.Inline)) // started at 01:00
		fake.StepWall(time.Hour)                            // 02:00
		var runs []time.Time
		_, err := h.ScheduleFunc(daily(2, 30), func() { runs = append(runs, fake.Now()) })
		require.NoError(t, err)
		fake.Advance(2 * time.Hour) // 04:00
		day := time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC)
		requireRanAt(t, runs, day)
		fake.Advance(24 * time.Hour)
		requireRanAt(t, runs, day, day.AddDate(0, 0, 1))
	})
	t.Run("every minute", func(t *testing.T) {
		start := time.Date(2026, 3, 29, 2, 29, 30, 0, time.UTC)
		h, fake, _, runs := wallRuns(t, start, everyMinute)
		fake.Advance(45 * time.Second) // 02:30:15
		fake.StepWall(10 * time.Minute)
		fake.Advance(time.Minute) // the wake for 02:31 comes at 02:41:00
		first := start.Add(30 * time.Second)
		requireRanAt(t, *runs, first, first.Add(11*time.Minute))
		skipped := h.Stats().PeriodicSkipped
		assert.Contains(t, []uint64{9, 10}, skipped, "02:32 to 02:40 skipped, and 02:41 if its tick had begun")
		fake.Advance(2 * time.Minute)
		require.Len(t, *runs, 4)
		assert.Equal(t, (*runs)[2].Truncate(time.Minute).Add(time.Minute), (*runs)[3].Truncate(time.Minute),
			"one run a minute again")
	})
}

// TestScheduleFuncFollowsTheWallClockEveryFollowsTheMonotonic: across a
// step back of the wall clock, an Every keeps its period on the monotonic
// clock while a schedule keeps to the wall times its Scheduler names.
func TestScheduleFuncFollowsTheWallClockEveryFollowsTheMonotonic(t *testing.T) {
	start := time.Date(2026, 3, 29, 2, 29, 30, 0, time.UTC)
	h, fake, _, runs := wallRuns(t, start, everyMinute)
	everyRuns := 0
	_, err := h.Every(time.Minute, func() { everyRuns++ })
	require.NoError(t, err)
	fake.Advance(time.Minute) // 02:30:30: the schedule ran at 02:30
	fake.StepWall(-30 * time.Minute)
	fake.Advance(10*time.Minute + testTick)
	assert.Equal(t, 11, everyRuns, "one a minute of monotonic time")
	assert.Len(t, *runs, 1, "the schedule waits for 02:31 on the wall clock")
}

// TestScheduleFuncComparesWallTimesOnly: on the runtime's clock, whose
// readings carry a monotonic reading, the times a Scheduler is handed and
// those it returns are compared as wall times: Next is handed a time
// without a monotonic reading, even when it returns its argument plus a
// delay, by which Time.Sub would ignore a step of the wall clock.
func TestScheduleFuncComparesWallTimesOnly(t *testing.T) {
	h := startTimer(t, WithExecutor(pool.Inline))
	// Neither Next nor the task may block the worker, which calls Next for
	// each run a late pass skips: they keep the first few only.
	args := make(chan time.Time, 4)
	ran := make(chan struct{}, 1)
	_, err := h.ScheduleFunc(schedulerFunc(func(after time.Time) time.Time {
		select {
		case args <- after:
		default:
		}
		return after.Add(5 * time.Millisecond)
	}), func() {
		select {
		case ran <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	<-ran // the run claimed with a second call of Next
	for range 2 {
		arg := <-args
		assert.Equal(t, arg.Round(0), arg, "Next was handed a monotonic reading")
	}
}

// TestScheduleFuncCountsAtMostAThousandRunsAStepPassed: the wall clock
// steps ten days ahead of a minutely schedule: one run, and 1000 of the
// 14 400 runs passed counted skipped, as Stats.PeriodicSkipped says.
func TestScheduleFuncCountsAtMostAThousandRunsAStepPassed(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 30, 0, time.UTC)
	h, fake, _, runs := wallRuns(t, start, everyMinute)
	fake.StepWall(10 * 24 * time.Hour)
	fake.Advance(time.Minute) // the wake for 00:01 finds the wall clock ten days on
	require.Len(t, *runs, 1)
	assert.Equal(t, uint64(maxCatchUp), h.Stats().PeriodicSkipped)
}
