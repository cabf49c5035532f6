package hashedwheel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Deadlines under a stepping wall clock: the timer keeps every deadline
// on the monotonic clock and reports it as the wall clock when asked plus
// what remains, or, for a context, as fixed at its call.

// TestDeadlinesAfterAWallStepReadTheWallClockNow: after the wall clock
// steps an hour ahead of the monotonic one since the timer started, a
// timeout's and a context's deadlines are the wall clock now plus their
// delay, not an hour behind it.
func TestDeadlinesAfterAWallStepReadTheWallClockNow(t *testing.T) {
	h, fake := newFakeTimer(t)
	fake.StepWall(time.Hour)
	to, err := h.AfterFunc(10*time.Second, func() {})
	require.NoError(t, err)
	assert.Equal(t, fake.Now().Add(10*time.Second), to.Deadline(), "AfterFunc's")
	c, cancel := h.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, _ := c.Deadline()
	assert.Equal(t, fake.Now().Add(10*time.Second), d, "WithTimeout's")
}

// TestATaskNeverRunsBeforeTheDeadlineItReportsAfterAStepBack: the wall
// clock steps back two hours while a timeout waits: the Deadline read
// after the step is the wall clock then plus what remains, and the task,
// which reads it as it runs, runs at or after it.
func TestATaskNeverRunsBeforeTheDeadlineItReportsAfterAStepBack(t *testing.T) {
	h, fake := newFakeTimer(t)
	var ranAt, deadlineThen time.Time
	to := mustSchedule(t, h, TaskFunc(func(to Timeout) {
		ranAt, deadlineThen = fake.Now(), to.Deadline()
	}), 10*time.Second)
	fake.Advance(time.Second)
	fake.StepWall(-2 * time.Hour)
	reported := to.Deadline()
	assert.Equal(t, fake.Now().Add(9*time.Second), reported, "after the step")
	fake.Advance(9 * time.Second)
	require.False(t, ranAt.IsZero(), "the task ran at its deadline")
	assert.False(t, ranAt.Before(reported), "ran at %v, before the Deadline %v reported after the step", ranAt, reported)
	assert.False(t, ranAt.Before(deadlineThen), "ran at %v, before the Deadline %v it read", ranAt, deadlineThen)
}

// TestAScheduleReportsTheWallTimeNextNamed: a daily 02:30 schedule made
// at 02:00 on a timer whose wall clock stepped back an hour since it
// started reports 02:30, the time its Scheduler named.
func TestAScheduleReportsTheWallTimeNextNamed(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC))
	h := newTimerOn(t, fake, WithExecutor(pool.Inline))
	fake.StepWall(-time.Hour) // 02:00
	to, err := h.ScheduleFunc(daily(2, 30), func() {})
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 3, 1, 2, 30, 0, 0, time.UTC), to.Deadline().UTC())
}

// TestAContextDerivedAfterAStepEndsByItsOwnDeadline: a wheel context
// derived, after the wall clock stepped an hour ahead, from a wheel
// parent due later is done at its own deadline.
func TestAContextDerivedAfterAStepEndsByItsOwnDeadline(t *testing.T) {
	h, fake := newFakeTimer(t)
	parent, cancelParent := h.WithTimeout(context.Background(), time.Minute)
	defer cancelParent()
	fake.StepWall(time.Hour)
	child, cancelChild := h.WithTimeout(parent, 5*time.Second)
	defer cancelChild()
	fake.Advance(5*time.Second + testTick)
	assert.Equal(t, context.DeadlineExceeded, child.Err(), "a tick past its own deadline")
	assert.NoError(t, parent.Err(), "the parent, due later")
}

// TestContextsLiveAtStopEndAtTheirDeadline: contexts of WithTimeout and
// WithDeadline live when the timer stops, after the wall clock stepped,
// end at their deadlines on the clock's own timers: not before, and by
// a tick after.
func TestContextsLiveAtStopEndAtTheirDeadline(t *testing.T) {
	h, fake := newFakeTimer(t)
	timeout, cancelTimeout := h.WithTimeout(context.Background(), 10*time.Second)
	defer cancelTimeout()
	deadline, cancelDeadline := h.WithDeadline(context.Background(), fake.Now().Add(10*time.Second))
	defer cancelDeadline()
	fake.Advance(time.Second)
	fake.StepWall(time.Hour)
	h.Stop()
	fake.Advance(9*time.Second - testTick)
	assert.NoError(t, timeout.Err(), "WithTimeout's, before its deadline")
	assert.NoError(t, deadline.Err(), "WithDeadline's, before its deadline")
	fake.Advance(testTick)
	assert.Equal(t, context.DeadlineExceeded, timeout.Err(), "WithTimeout's, at its deadline")
	assert.Equal(t, context.DeadlineExceeded, deadline.Err(), "WithDeadline's, at its deadline")
}
