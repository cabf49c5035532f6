package hashedwheel

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/pool"
)

// These tests share one pool.NewAnts between timers, or between a timer
// and other work, as a service does: neither a timer's worker nor Stop
// waits for a goroutine of the pool, so no timer stalls another, and no
// task that waits for another timer deadlocks with it.

// handOffBound bounds the waits of these tests: far more than the work
// needs, far less than a stalled worker would take.
const handOffBound = 5 * time.Second

// sharedPool returns a pool of size goroutines, released once the test's
// timers have stopped.
func sharedPool(t *testing.T, size int) *pool.Ants {
	t.Helper()
	p, err := pool.NewAnts(size)
	require.NoError(t, err)
	t.Cleanup(p.Release) // cleanups run last-registered first: after the timers' Stop
	return p
}

// waitOrFail waits for c, failing the test if it takes more than
// handOffBound.
func waitOrFail(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(handOffBound):
		require.Fail(t, what)
	}
}

// TestSlowTasksOfOneTimerStallNoOtherTimersWorker: two slow tasks of timer
// a hold both goroutines of a shared pool. Timer b's worker goes on: a
// timeout of b is cancelled and its Cancelled hook runs at once, b's task
// due meanwhile waits for a goroutine and starts once a's tasks return,
// and b's Stats show that wait. A worker that waited in Execute held b's
// hook until a's tasks returned.
func TestSlowTasksOfOneTimerStallNoOtherTimersWorker(t *testing.T) {
	const hold = 300 * time.Millisecond
	shared := sharedPool(t, 2)
	a := startTimer(t, WithExecutor(shared))
	b := startTimer(t, WithExecutor(shared))
	var held sync.WaitGroup
	held.Add(2)
	release := make(chan struct{})
	for range 2 {
		_, err := a.AfterFunc(0, func() {
			held.Done()
			<-release
		})
		require.NoError(t, err)
	}
	held.Wait()
	time.AfterFunc(hold, func() { close(release) })

	ranB := make(chan struct{})
	_, err := b.AfterFunc(0, func() { close(ranB) }) // waits for a goroutine
	require.NoError(t, err)
	hooked := make(chan struct{})
	cancelled := &hookTask{onCancel: func(Timeout) { close(hooked) }}
	to := mustSchedule(t, b, cancelled, time.Hour)
	time.Sleep(5 * time.Millisecond) // b's worker hands its due task over, and files the hour-long one
	start := time.Now()
	require.True(t, to.Cancel())
	waitOrFail(t, hooked, "b's Cancelled hook waited for a's tasks")
	assert.Less(t, time.Since(start), hold/2, "b's hook ran while a's tasks held the pool")
	assert.False(t, isClosed(release), "a's tasks still hold the pool")
	waitOrFail(t, ranB, "b's task never ran")
	require.Eventually(t, func() bool { return b.Lateness().HandOff.Count() == 1 }, handOffBound, time.Millisecond,
		"b's task counted once it returned")
	assert.Greater(t, b.Stats().MaxHandOffWait, hold/2, "b's task waited for a goroutine")
	assert.Greater(t, b.Stats().MaxLateness, hold/2, "and started that late")
}

// TestATaskWaitingForAnotherTimersHookDoesNotDeadlock: on a shared pool of
// one goroutine, a task of timer a waits for a Cancelled hook of timer b,
// while b has a task due: b's worker hands it over without waiting for the
// goroutine a's task holds, and runs the hook; a's task returns, and b's
// runs. A worker that waited in Execute for the goroutine never ran the
// hook.
func TestATaskWaitingForAnotherTimersHookDoesNotDeadlock(t *testing.T) {
	shared := sharedPool(t, 1)
	a := startTimer(t, WithExecutor(shared))
	b := startTimer(t, WithExecutor(shared))
	hooked, aStarted, bRan := make(chan struct{}), make(chan struct{}), make(chan struct{})
	_, err := a.AfterFunc(0, func() {
		close(aStarted)
		<-hooked
	})
	require.NoError(t, err)
	<-aStarted
	_, err = b.AfterFunc(0, func() { close(bRan) })
	require.NoError(t, err)
	to := mustSchedule(t, b, &hookTask{onCancel: func(Timeout) { close(hooked) }}, time.Hour)
	time.Sleep(5 * time.Millisecond) // b's worker hands its due task over, and files the hour-long one
	require.True(t, to.Cancel())
	waitOrFail(t, bRan, "a's task and b's worker wait for each other")
}

// TestTasksHandingFollowUpWorkToTheirPoolDoNotDeadlock: two tasks due
// together on a pool of two goroutines each hand the same pool a job, as
// a timeout that enqueues its cleanup does, while both goroutines are
// held: the jobs queue, the tasks return, the jobs and the timer's later
// task run, and Stop returns.
func TestTasksHandingFollowUpWorkToTheirPoolDoNotDeadlock(t *testing.T) {
	shared := sharedPool(t, 2)
	h := startTimer(t, WithExecutor(shared))
	var both, jobs sync.WaitGroup
	both.Add(2)
	jobs.Add(2)
	for range 2 {
		_, err := h.AfterFunc(0, func() {
			both.Done()
			both.Wait() // both goroutines held
			assert.NoError(t, shared.Execute(jobs.Done))
		})
		require.NoError(t, err)
	}
	later := make(chan struct{})
	_, err := h.AfterFunc(20*time.Millisecond, func() { close(later) })
	require.NoError(t, err)
	jobsDone := make(chan struct{})
	go func() { jobs.Wait(); close(jobsDone) }()
	waitOrFail(t, jobsDone, "the follow-up jobs never ran")
	waitOrFail(t, later, "the timer's later task never ran")
	stopped := make(chan struct{})
	go func() { h.Stop(); close(stopped) }()
	waitOrFail(t, stopped, "Stop never returned")
}

// TestStopFromATaskWaitsForNoTaskOfAnotherTimer: on a shared pool of two
// goroutines, a task of timer b waits for a task of timer a to have
// stopped a; a's task calls a.Stop, which returns without waiting for b's
// task, or for a goroutine of the pool to hand a's other due task to.
func TestStopFromATaskWaitsForNoTaskOfAnotherTimer(t *testing.T) {
	shared := sharedPool(t, 2)
	a := startTimer(t, WithExecutor(shared))
	b := startTimer(t, WithExecutor(shared))
	aStopped, bDone := make(chan struct{}), make(chan struct{})
	var both sync.WaitGroup
	both.Add(2)
	_, err := b.AfterFunc(0, func() {
		both.Done()
		<-aStopped
		close(bDone)
	})
	require.NoError(t, err)
	_, err = a.AfterFunc(0, func() {
		both.Done()
		both.Wait()
		_, err := a.AfterFunc(0, func() {}) // due while the pool is full: the shutdown hands it over
		assert.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
		a.Stop()
		close(aStopped)
	})
	require.NoError(t, err)
	waitOrFail(t, bDone, "a.Stop, called from a's task, waited for b's task")
}

// TestStopFromAnotherTimersTaskDoesNotWaitForItsTasks: b.Stop called from
// a task of another timer a returns once b's worker has stopped, while
// b's task still runs: it cannot tell whether that task waits for it. A
// Stop from outside both timers then waits for b's task.
func TestStopFromAnotherTimersTaskDoesNotWaitForItsTasks(t *testing.T) {
	a := startTimer(t, WithTickDuration(time.Millisecond))
	b := startTimer(t, WithTickDuration(time.Millisecond))
	release, finished := startHeldTask(t, b)
	stopped := make(chan struct{})
	_, err := a.AfterFunc(0, func() {
		b.Stop()
		close(stopped)
	})
	require.NoError(t, err)
	waitOrFail(t, stopped, "b.Stop, called from a's task, waited for b's task")
	assert.False(t, isClosed(finished), "b's task still runs")
	outside := make(chan bool)
	go func() {
		b.Stop()
		outside <- isClosed(finished)
	}()
	close(release)
	assert.True(t, <-outside, "a Stop from outside returned before b's task did")
}

// TestTickLagCountsTicksWithNothingDue: a Cancelled hook holds the worker
// while the clock moves ten ticks, with nothing due in them: MaxTickLag
// counts the ten ticks the worker was late for.
func TestTickLagCountsTicksWithNothingDue(t *testing.T) {
	h, fake := newFakeTimer(t)
	entered, release := make(chan struct{}), make(chan struct{})
	to := mustSchedule(t, h, &hookTask{onCancel: func(Timeout) {
		close(entered)
		<-release
	}}, time.Hour)
	fake.WaitAsleep()
	require.True(t, to.Cancel())
	fake.Jump(testTick) // the worker, lingering, takes the cancellation in at the tick's end
	<-entered
	fake.Jump(10 * testTick)
	close(release)
	fake.WaitAsleep()
	assert.GreaterOrEqual(t, h.Stats().MaxTickLag, 9*testTick, "the worker was late for the ticks it missed")
}

// TestATaskRunsUnderAtMostEightFramesOfTheTimer: on the default executor,
// a task's stack, as its panic would show it, has at most eight frames of
// this module's code under the task's own: AfterFunc's, Every's and
// ScheduleFunc's.
func TestATaskRunsUnderAtMostEightFramesOfTheTimer(t *testing.T) {
	h := startTimer(t, WithTickDuration(time.Millisecond))
	frames := make(chan []string, 3)
	below := func() {
		pc := make([]uintptr, 64)
		walk := runtime.CallersFrames(pc[:runtime.Callers(1, pc)])
		var ours []string
		for f, more := walk.Next(); ; f, more = walk.Next() {
			if strings.HasPrefix(f.Function, "github.com/wheeltimer/wheeltimer/") &&
				!strings.Contains(f.Function, ".TestATaskRunsUnderAtMostEightFramesOfTheTimer") {
				ours = append(ours, f.Function)
			}
			if !more {
				break
			}
		}
		frames <- ours
	}
	_, err := h.AfterFunc(0, func() { below() })
	require.NoError(t, err)
	ours := <-frames
	assert.LessOrEqual(t, len(ours), 8, "a one-shot task: %v", ours)
	var once, scheduledOnce sync.Once
	every, err := h.Every(time.Millisecond, func() { once.Do(below) })
	require.NoError(t, err)
	ours = <-frames
	assert.LessOrEqual(t, len(ours), 8, "Every's task: %v", ours)
	every.Cancel()
	scheduled, err := h.ScheduleFunc(schedulerFunc(func(t time.Time) time.Time { return t.Add(time.Millisecond) }),
		func() { scheduledOnce.Do(below) })
	require.NoError(t, err)
	ours = <-frames
	assert.LessOrEqual(t, len(ours), 8, "ScheduleFunc's task: %v", ours)
	scheduled.Cancel()
}
