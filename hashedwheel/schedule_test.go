package hashedwheel

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steps is a Scheduler whose runs come after the given gaps, in turn,
// then end.
type steps struct{ gaps []time.Duration }

func (s *steps) Next(after time.Time) time.Time {
	if len(s.gaps) == 0 {
		return time.Time{}
	}
	gap := s.gaps[0]
	s.gaps = s.gaps[1:]
	return after.Add(gap)
}

// schedulerFunc adapts a function to Scheduler.
type schedulerFunc func(time.Time) time.Time

func (f schedulerFunc) Next(t time.Time) time.Time { return f(t) }

// TestScheduleFuncRunsAtTheTimesItsSchedulerGives: each run at the first
// tick end at or after the time Next gave, never before, the next computed from
// that time; a zero Next ends the runs after the run claimed then, and the
// timeout is expired, no longer pending.
func TestScheduleFuncRunsAtTheTimesItsSchedulerGives(t *testing.T) {
	h, fake := newFakeTimer(t)
	start := fake.Nanotime()
	var runs []int64
	to, err := h.ScheduleFunc(&steps{gaps: []time.Duration{
		3 * testTick, 5*testTick + testTick/2, testTick, 2 * testTick,
	}}, func() { runs = append(runs, fake.Nanotime()-start) })
	require.NoError(t, err)
	assert.Equal(t, int64(1), h.PendingTimeouts())
	fake.Advance(20 * testTick)
	// Due at 3, 8.5, 9.5 and 11.5 ticks: run at the tick ends at or after.
	want := []int64{3, 9, 10, 12}
	for i := range want {
		want[i] *= int64(testTick)
	}
	assert.Equal(t, want, runs)
	assert.True(t, to.IsExpired(), "the schedule ended")
	assert.False(t, to.Cancel())
	assert.False(t, to.Reset(time.Second))
	s := h.Stats()
	assert.Zero(t, s.Pending)
	assert.Equal(t, uint64(1), s.Expired)
	assert.Equal(t, uint64(4), s.PeriodicRuns)
	assert.Zero(t, s.ScheduleErrors)
	assert.Empty(t, h.Stop())
}

// TestScheduleFuncEndsABadSchedule: a Next that returns a time not after
// its argument, or panics, ends the runs, logged and counted, with no busy
// loop; the run claimed then still runs.
func TestScheduleFuncEndsABadSchedule(t *testing.T) {
	for name, next := range map[string]func(calls int, after time.Time) time.Time{
		"not after": func(calls int, after time.Time) time.Time {
			if calls < 3 {
				return after.Add(testTick)
			}
			return after
		},
		"panics": func(calls int, after time.Time) time.Time {
			if calls < 3 {
				return after.Add(testTick)
			}
			panic("schedule exploded")
		},
	} {
		t.Run(name, func(t *testing.T) {
			logs, logger := newLogBuffer()
			h, fake := newFakeTimer(t, WithLogger(logger))
			calls, runs := 0, 0
			to, err := h.ScheduleFunc(schedulerFunc(func(after time.Time) time.Time {
				calls++
				return next(calls, after)
			}), func() { runs++ })
			require.NoError(t, err)
			fake.Advance(10 * testTick)
			assert.Equal(t, 3, calls, "Next is not called again once the schedule ended")
			assert.Equal(t, 2, runs, "the runs of the first two times")
			assert.True(t, to.IsExpired())
			s := h.Stats()
			assert.Equal(t, uint64(1), s.ScheduleErrors)
			assert.Zero(t, s.Pending)
			assert.Contains(t, logs.String(), "schedule ended")
		})
	}
}

// TestScheduleFuncKeepsEverysGuarantees: Reset moves the next run and the
// schedule continues from it, Cancel ends the runs, and Stop returns a
// live schedule's timeout, cancelled.
func TestScheduleFuncKeepsEverysGuarantees(t *testing.T) {
	h, fake := newFakeTimer(t)
	start := fake.Nanotime()
	var runs []int64
	every3 := schedulerFunc(func(after time.Time) time.Time { return after.Add(3 * testTick) })
	to, err := h.ScheduleFunc(every3, func() { runs = append(runs, (fake.Nanotime()-start)/int64(testTick)) })
	require.NoError(t, err)
	fake.Advance(5 * testTick) // runs at 3
	require.True(t, to.Reset(5*testTick))
	fake.Advance(10 * testTick) // due at 10, 13: runs then
	assert.Equal(t, []int64{3, 10, 13}, runs)

	other, err := h.ScheduleFunc(every3, func() {})
	require.NoError(t, err)
	require.True(t, other.Cancel())
	assert.Equal(t, []Timeout{to}, h.Stop())
	assert.True(t, to.IsCancelled())
}

// TestScheduleFuncRefusesBadArguments: a nil Scheduler, one whose first
// Next is zero or not after now, and a nil function are refused, and
// nothing is scheduled.
func TestScheduleFuncRefusesBadArguments(t *testing.T) {
	h, _ := newFakeTimer(t)
	for name, s := range map[string]Scheduler{
		"nil":         nil,
		"nil func":    schedulerFunc(nil),
		"zero":        schedulerFunc(func(time.Time) time.Time { return time.Time{} }),
		"not after":   schedulerFunc(func(t time.Time) time.Time { return t }),
		"panics":      schedulerFunc(func(time.Time) time.Time { panic("no") }),
		"in the past": schedulerFunc(func(t time.Time) time.Time { return t.Add(-time.Hour) }),
	} {
		to, err := h.ScheduleFunc(s, func() {})
		assert.Nil(t, to, name)
		assert.ErrorIs(t, err, ErrInvalidSchedule, name)
		assert.True(t, strings.HasPrefix(err.Error(), ErrInvalidSchedule.Error()), name)
	}
	to, err := h.ScheduleFunc(schedulerFunc(func(t time.Time) time.Time { return t.Add(time.Second) }), nil)
	assert.Nil(t, to)
	assert.ErrorIs(t, err, ErrNilTask)
	assert.Zero(t, h.Stats().Scheduled, "a failed call schedules nothing")
	h.Stop()
	_, err = h.ScheduleFunc(schedulerFunc(func(t time.Time) time.Time { return t.Add(time.Second) }), func() {})
	assert.ErrorIs(t, err, ErrStopped)
}
