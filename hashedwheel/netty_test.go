package hashedwheel

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Netty's HashedWheelTimerTest, case by case (the Netty name is in each
// comment). Where Netty sleeps, these tests move a fake clock; real time is
// used only where it is the subject: that a task waits for its delay.

// testScheduleTimeoutShouldNotRunBeforeDelay
func TestNettyScheduleTimeoutShouldNotRunBeforeDelay(t *testing.T) {
	h, err := New(WithTickDuration(10 * time.Millisecond))
	require.NoError(t, err)
	defer h.Stop()
	const delay = 300 * time.Millisecond
	made := time.Now()
	ran := make(chan time.Duration, 1)
	to, err := h.AfterFunc(delay, func() { ran <- time.Since(made) })
	require.NoError(t, err)
	select {
	case <-ran:
		require.Fail(t, "ran before its delay")
	case <-time.After(delay - 50*time.Millisecond):
	}
	assert.False(t, to.IsExpired())
	assert.GreaterOrEqual(t, <-ran, delay, "never early")
}

// testScheduleTimeoutShouldRunAfterDelay
func TestNettyScheduleTimeoutShouldRunAfterDelay(t *testing.T) {
	h, err := New(WithTickDuration(10 * time.Millisecond))
	require.NoError(t, err)
	defer h.Stop()
	ran := make(chan struct{})
	to, err := h.AfterFunc(200*time.Millisecond, func() { close(ran) })
	require.NoError(t, err)
	select {
	case <-ran:
	case <-time.After(3 * time.Second):
		require.Fail(t, "did not run within 3s of a 200ms delay")
	}
	assert.True(t, to.IsExpired())
}

// testStopTimer
func TestNettyStopTimer(t *testing.T) {
	h, fake := newFakeTimer(t)
	fired := 0
	for i := 0; i < 3; i++ {
		mustSchedule(t, h, TaskFunc(func(Timeout) { fired++ }), time.Millisecond)
	}
	advance(fake, 2*testTick)
	require.Equal(t, 3, fired)
	assert.Empty(t, h.Stop(), "nothing left once all fired")

	h2, fake2 := newFakeTimer(t)
	for i := 0; i < 5; i++ {
		mustSchedule(t, h2, noopTask, 5*time.Second)
	}
	advance(fake2, time.Second)
	assert.Len(t, h2.Stop(), 5)
}

// testTimerShouldThrowExceptionAfterShutdownForNewTimeouts
func TestNettyNewTimeoutAfterStopFails(t *testing.T) {
	h, fake := newFakeTimer(t)
	for i := 0; i < 3; i++ {
		mustSchedule(t, h, noopTask, time.Millisecond)
	}
	advance(fake, 2*testTick)
	h.Stop()
	_, err := h.NewTimeout(noopTask, time.Millisecond)
	assert.ErrorIs(t, err, ErrStopped)
}

// testTimerOverflowWheelLength: a task that re-schedules itself every
// 100ms on a 32-bucket wheel keeps running; Stop returns the re-armed one.
func TestNettyTimerOverflowWheelLength(t *testing.T) {
	h, fake := newFakeTimer(t, WithTickDuration(100*time.Millisecond), WithTicksPerWheel(32))
	task := &reschedulingTask{h: h, delay: 100 * time.Millisecond}
	mustSchedule(t, h, task, 100*time.Millisecond)
	for task.runs.Load() < 3 {
		fake.Jump(100 * time.Millisecond)
		fake.WaitAsleep()
	}
	assert.Zero(t, task.errs.Load(), "re-schedules refused")
	assert.Len(t, h.Stop(), 1)
}

// The historic variant of testTimerOverflowWheelLength (netty#1959): a
// task re-scheduling itself every second on a 32-bucket, 100ms wheel runs
// exactly 3 times in 3.5s; rounds counted from tick zero made it drift.
func TestNettySelfReschedulingDoesNotDrift(t *testing.T) {
	h, fake := newFakeTimer(t, WithTickDuration(100*time.Millisecond), WithTicksPerWheel(32))
	task := &reschedulingTask{h: h, delay: time.Second}
	mustSchedule(t, h, task, time.Second)
	for i := 0; i < 35; i++ {
		fake.Jump(100 * time.Millisecond)
		fake.WaitAsleep()
	}
	assert.Zero(t, task.errs.Load(), "re-schedules refused")
	assert.Equal(t, int64(3), task.runs.Load())
}

// testExecutionOnTime: 100 000 timeouts of 125ms on a 200ms tick each run
// no earlier than 125ms and sooner than 2·(200+125)ms after being made.
// Under the race detector, which makes each task several times dearer, the
// burst is 10 000.
func TestNettyExecutionOnTime(t *testing.T) {
	const (
		tick  = 200 * time.Millisecond
		delay = 125 * time.Millisecond
	)
	n := 100_000
	if raceEnabled {
		n = 10_000
	}
	h, err := New(WithTickDuration(tick))
	require.NoError(t, err)
	defer h.Stop()
	delays := make(chan time.Duration, n)
	for i := 0; i < n; i++ {
		made := time.Now()
		_, err := h.AfterFunc(delay, func() { delays <- time.Since(made) })
		require.NoError(t, err)
	}
	for i := 0; i < n; i++ {
		d := <-delays
		require.GreaterOrEqual(t, d, delay, "never early")
		require.Less(t, d, 2*(tick+delay))
	}
}

// testExecutionOnTaskExecutor
func TestNettyExecutionOnTaskExecutor(t *testing.T) {
	var executed atomic.Int64
	exec := executorFunc(func(task func()) error { // inline, counted
		defer executed.Add(1)
		task()
		return nil
	})
	h, fake := newFakeTimer(t, WithTicksPerWheel(32), WithMaxPendingTimeouts(2), WithExecutor(exec))
	ran := false
	mustSchedule(t, h, TaskFunc(func(Timeout) { ran = true }), 10*time.Millisecond)
	advance(fake, 2*testTick)
	assert.True(t, ran)
	assert.Equal(t, int64(1), executed.Load(), "the task went through the executor")
}

// testRejectedExecutionExceptionWhenTooManyTimeoutsAreAddedBackToBack
func TestNettyTooManyTimeoutsAddedBackToBack(t *testing.T) {
	h, _ := newFakeTimer(t, WithTicksPerWheel(32), WithMaxPendingTimeouts(2))
	mustSchedule(t, h, noopTask, 5*time.Second)
	mustSchedule(t, h, noopTask, 5*time.Second)
	_, err := h.NewTimeout(noopTask, time.Millisecond)
	assert.ErrorIs(t, err, ErrTooManyPendingTimeouts)
	assert.Equal(t, int64(2), h.PendingTimeouts(), "a rejected NewTimeout changes nothing")
}

// testNewTimeoutShouldStopThrowingRejectedExecutionExceptionWhenExistingTimeoutIsCancelled:
// here the place is free once Cancel returns, where Netty frees it when the
// worker processes the cancellation (docs/netty.md).
func TestNettyAcceptsAgainOnceATimeoutIsCancelled(t *testing.T) {
	h, fake := newFakeTimer(t, WithTickDuration(100*time.Millisecond), WithTicksPerWheel(32), WithMaxPendingTimeouts(2))
	mustSchedule(t, h, noopTask, 5*time.Second)
	second := mustSchedule(t, h, noopTask, 5*time.Second)
	fake.WaitAsleep()
	fake.Jump(100 * time.Millisecond) // both in buckets
	fake.WaitAsleep()
	require.True(t, second.Cancel())
	ran := false
	mustSchedule(t, h, TaskFunc(func(Timeout) { ran = true }), 90*time.Millisecond)
	fake.Jump(200 * time.Millisecond)
	fake.WaitAsleep()
	assert.True(t, ran)
}

// testNewTimeoutShouldStopThrowingRejectedExecutionExceptionWhenExistingTimeoutIsExecuted:
// a task at the limit may schedule again from inside its own Run.
func TestNettyAcceptsAgainOnceATimeoutRan(t *testing.T) {
	h, fake := newFakeTimer(t, WithTickDuration(25*time.Millisecond), WithTicksPerWheel(4), WithMaxPendingTimeouts(2))
	mustSchedule(t, h, noopTask, 5*time.Second)
	var inner error
	ranAgain := false
	mustSchedule(t, h, TaskFunc(func(Timeout) {
		_, inner = h.NewTimeout(TaskFunc(func(Timeout) { ranAgain = true }), 90*time.Millisecond)
	}), 90*time.Millisecond)
	for i := 0; i < 10; i++ {
		fake.Jump(25 * time.Millisecond)
		fake.WaitAsleep()
	}
	assert.NoError(t, inner)
	assert.True(t, ranAgain)
}

// reportPendingTimeouts
func TestNettyReportPendingTimeouts(t *testing.T) {
	h, fake := newFakeTimer(t)
	t1 := mustSchedule(t, h, noopTask, 100*time.Minute)
	t2 := mustSchedule(t, h, noopTask, 100*time.Minute)
	ran := false
	mustSchedule(t, h, TaskFunc(func(Timeout) {
		ran = true
	}), 90*time.Millisecond)
	assert.Equal(t, int64(3), h.PendingTimeouts())
	t1.Cancel()
	t2.Cancel()
	advance(fake, 100*time.Millisecond)
	require.True(t, ran)
	assert.Zero(t, h.PendingTimeouts())
}

// testOverflow: a delay of math.MaxInt64 must not overflow into the past.
func TestNettyOverflow(t *testing.T) {
	h, fake := newFakeTimer(t)
	ran := false
	to := mustSchedule(t, h, TaskFunc(func(Timeout) { ran = true }), math.MaxInt64)
	fake.WaitAsleep()
	fake.Jump(time.Second)
	fake.WaitAsleep()
	assert.False(t, ran)
	assert.True(t, to.Cancel())
	h.Stop()
	assert.False(t, ran)
}

// testStopTimerCancelsPendingTasks
func TestNettyStopTimerCancelsPendingTasks(t *testing.T) {
	h, fake := newFakeTimer(t)
	for i := 0; i < 5; i++ {
		mustSchedule(t, h, noopTask, 5*time.Second)
	}
	advance(fake, time.Second)
	left := h.Stop()
	require.Len(t, left, 5)
	for _, to := range left {
		assert.True(t, to.IsCancelled())
		assert.False(t, to.Cancel(), "already cancelled by Stop")
	}
}

// cancelWillCallCallback (upstream lacks @Test, so it never ran there)
func TestNettyCancelWillCallCallback(t *testing.T) {
	h, fake := newFakeTimer(t)
	task := &hookTask{}
	to := mustSchedule(t, h, task, 90*time.Millisecond)
	assert.Equal(t, int64(1), h.PendingTimeouts())
	assert.True(t, to.Cancel())
	advance(fake, 200*time.Millisecond)
	assert.Zero(t, task.runs.Load(), "a cancelled task ran")
	assert.Equal(t, int32(1), task.cancelled.Load())
	assert.Zero(t, h.PendingTimeouts())
}

// testPendingTimeoutsShouldBeCountedCorrectlyWhenTimeoutCancelledWithinGoalTick
// (netty#14959): timeouts of one bucket are cancelled while a task of that
// bucket runs on the worker. Each must end exactly once and the count must
// reach zero, never going negative.
func TestNettyPendingCountedWhenCancelledWithinGoalTick(t *testing.T) {
	h, fake := newFakeTimer(t, WithTickDuration(100*time.Millisecond))
	running := make(chan struct{})
	release := make(chan struct{})
	var ran atomic.Int32
	first := mustSchedule(t, h, TaskFunc(func(Timeout) {
		ran.Add(1)
		close(running)
		<-release
	}), 200*time.Millisecond)
	others := make([]Timeout, 10)
	for i := range others {
		others[i] = mustSchedule(t, h, TaskFunc(func(Timeout) { ran.Add(1) }), 200*time.Millisecond)
	}
	fake.WaitAsleep()
	fake.Jump(300 * time.Millisecond)
	<-running
	cancelled := 0
	for _, to := range others {
		if to.Cancel() {
			cancelled++
		}
	}
	close(release)
	fake.WaitAsleep()
	advance(fake, 200*time.Millisecond)
	assert.True(t, first.IsExpired())
	assert.Equal(t, 11, int(ran.Load())+cancelled, "each ran or was cancelled, once")
	assert.Zero(t, h.PendingTimeouts())
}

// The executor Netty defaults to runs tasks on the worker; ours must
// allow Stop from such a task.
func TestNettyStopFromInlineTaskDoesNotDeadlock(t *testing.T) {
	h, fake := newFakeTimer(t)
	pending := mustSchedule(t, h, noopTask, time.Hour)
	var left []Timeout
	mustSchedule(t, h, TaskFunc(func(Timeout) { left = h.Stop() }), 0)
	advance(fake, testTick)
	require.Len(t, left, 1)
	assert.Same(t, pending.(*timeout), left[0].(*timeout))
	_, err := h.NewTimeout(noopTask, 0)
	assert.ErrorIs(t, err, ErrStopped)
}
