package hashedwheel

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/pool"
)

// TestEveryRunsAtFixedRate: the k-th run is due at the call's time plus k
// periods and runs at the end of the tick covering it, never before and
// without drift, however the period falls across ticks.
func TestEveryRunsAtFixedRate(t *testing.T) {
	h, fake := newFakeTimer(t)
	advance(fake, 3*testTick+testTick/3) // the call is not on a tick end
	start := fake.Nanotime()
	period := 25 * time.Millisecond // two and a half ticks
	var runs []int64
	to, err := h.Every(period, func() { runs = append(runs, fake.Nanotime()) })
	require.NoError(t, err)
	advance(fake, 30*period+testTick)
	require.Len(t, runs, 30)
	for k, at := range runs {
		due := start + int64(k+1)*int64(period)
		end := (due + int64(testTick) - 1) / int64(testTick) * int64(testTick) // tick k covers (k·tick, (k+1)·tick]
		// The clock moves a tick at a time from start: the first reading
		// at or after the end of the tick covering the run's deadline.
		want := start + (end-start+int64(testTick)-1)/int64(testTick)*int64(testTick)
		assert.Equal(t, want, at, "run %d is due at %d", k+1, due)
	}
	assert.False(t, to.IsExpired(), "a periodic timeout never expires")
	assert.Equal(t, int64(1), h.PendingTimeouts(), "it counts as one pending timeout")
	s := h.Stats()
	assert.Equal(t, uint64(30), s.PeriodicRuns)
	assert.Zero(t, s.Expired)
	assert.Equal(t, []Timeout{to}, h.Stop(), "Stop returns it")
	assert.True(t, to.IsCancelled())
}

func TestEveryCancelEndsTheRuns(t *testing.T) {
	h, fake := newFakeTimer(t)
	runs := 0
	to, err := h.Every(testTick, func() { runs++ })
	require.NoError(t, err)
	advance(fake, 5*testTick)
	require.Equal(t, 5, runs, "runs at 1 to 5 ticks, each at its deadline")
	require.True(t, to.Cancel())
	assert.False(t, to.Cancel())
	advance(fake, 5*testTick)
	assert.Equal(t, 5, runs, "no run after Cancel")
	assert.Zero(t, h.PendingTimeouts())
	assert.Empty(t, h.Stop())
}

// TestEveryCancelFromItsOwnRun: a run that cancels its timeout is the last.
func TestEveryCancelFromItsOwnRun(t *testing.T) {
	h, fake := newFakeTimer(t)
	var to Timeout
	runs := 0
	to, err := h.Every(testTick, func() {
		runs++
		if runs == 3 {
			assert.True(t, to.Cancel())
		}
	})
	require.NoError(t, err)
	advance(fake, 10*testTick)
	assert.Equal(t, 3, runs)
}

// TestEveryRunDueWhileOneRunsStartsWhenItReturns: on a pool, a run that
// comes due while the previous one still runs is owed, not lost, and
// starts as soon as that one returns, as time.Ticker's channel holds a
// tick for a slow receiver; runs due while one is owed are skipped and
// counted; runs never overlap.
func TestEveryRunDueWhileOneRunsStartsWhenItReturns(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(goExecutor{}))
	var running, overlaps, runs atomic.Int32
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	_, err := h.Every(testTick, func() {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		if runs.Add(1) == 1 {
			entered <- struct{}{}
			<-release // the first run is slow
		}
		running.Add(-1)
	})
	require.NoError(t, err)
	advance(fake, testTick) // due at the end of tick 0: runs then
	<-entered
	advance(fake, 5*testTick)
	assert.Equal(t, int32(1), runs.Load(), "no run overlaps the slow one")
	assert.Equal(t, uint64(4), h.Stats().PeriodicSkipped, "one run owed, the four after it skipped")
	close(release)
	require.Eventually(t, func() bool { return runs.Load() == 2 }, 10*time.Second, time.Millisecond,
		"the owed run starts as the slow one returns, before the next tick")
	fake.Advance(testTick) // returns once the runs it started have returned
	assert.Equal(t, int32(3), runs.Load(), "then the runs keep their rate")
	assert.Equal(t, uint64(3), h.Stats().PeriodicRuns)
	assert.Zero(t, overlaps.Load())
}

// TestEveryCancelLeavesOnlyTheRunInProgress: a Cancel while a run is in
// progress and another is owed lets the one in progress complete and
// starts no other.
func TestEveryCancelLeavesOnlyTheRunInProgress(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(goExecutor{}))
	var runs atomic.Int32
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	to, err := h.Every(testTick, func() {
		runs.Add(1)
		entered <- struct{}{}
		<-release
	})
	require.NoError(t, err)
	advance(fake, 2*testTick)
	<-entered
	advance(fake, 3*testTick) // a run is owed
	require.True(t, to.Cancel())
	close(release)
	h.Stop() // waits for the run in progress
	assert.Equal(t, int32(1), runs.Load(), "no run starts after Cancel")
}

// TestEveryResetMovesTheNextRunAndKeepsThePeriod.
func TestEveryResetMovesTheNextRunAndKeepsThePeriod(t *testing.T) {
	h, fake := newFakeTimer(t)
	var runs []int64
	to, err := h.Every(4*testTick, func() { runs = append(runs, fake.Nanotime()) })
	require.NoError(t, err)
	advance(fake, testTick)
	require.True(t, to.Reset(10*testTick)) // next run due at 11 ticks, the end of tick 10
	advance(fake, 19*testTick)
	assert.Equal(t, []int64{int64(11 * testTick), int64(15 * testTick), int64(19 * testTick)}, runs)
}

func TestEveryRefusesBadArguments(t *testing.T) {
	h, _ := newFakeTimer(t)
	for _, p := range []time.Duration{0, -time.Second} {
		to, err := h.Every(p, func() {})
		assert.Nil(t, to)
		assert.True(t, errors.Is(err, ErrInvalidPeriod), "%v", err)
		assert.ErrorContains(t, err, "Every("+p.String()+")")
	}
	// A period shorter than the tick could not be kept: refused, naming
	// the period and the tick.
	to, err := h.Every(testTick/10, func() {})
	assert.Nil(t, to)
	assert.ErrorIs(t, err, ErrInvalidPeriod)
	assert.ErrorContains(t, err, "Every(1ms)")
	assert.ErrorContains(t, err, "tick of 10ms")
	to, err = h.Every(time.Second, nil)
	assert.Nil(t, to)
	assert.ErrorIs(t, err, ErrNilTask)
	assert.Zero(t, h.Stats().Scheduled, "a failed call schedules nothing")
	h.Stop()
	_, err = h.Every(time.Second, func() {})
	assert.ErrorIs(t, err, ErrStopped)
}

// TestEveryAllocatesNothingPerRun runs a periodic timeout inline for many
// periods: the worker allocates nothing for its runs.
func TestEveryAllocatesNothingPerRun(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(pool.Inline))
	runs := 0
	_, err := h.Every(testTick, func() { runs++ })
	require.NoError(t, err)
	advance(fake, 10*testTick) // warm up the worker's lists
	allocs := testing.AllocsPerRun(200, func() {
		fake.Jump(testTick)
		fake.WaitAsleep()
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 211, runs, "10, then AllocsPerRun's warm-up run and its 200")
}

// heldExecutor keeps the functions it is given until the test runs them.
type heldExecutor struct {
	mu   sync.Mutex
	held []func()
}

func (e *heldExecutor) Execute(f func()) error {
	e.mu.Lock()
	e.held = append(e.held, f)
	e.mu.Unlock()
	return nil
}

// runHeld runs the functions held so far, on the calling goroutine.
func (e *heldExecutor) runHeld() int {
	e.mu.Lock()
	held := e.held
	e.held = nil
	e.mu.Unlock()
	for _, f := range held {
		f()
	}
	return len(held)
}

// TestEveryResetRevokesAClaimedRun: a run the worker claimed and handed to
// the executor, but that has not started, does not start once a Reset
// returned true: no run starts before the new deadline.
func TestEveryResetRevokesAClaimedRun(t *testing.T) {
	exec := &heldExecutor{}
	h, fake := newFakeTimer(t, WithExecutor(exec))
	var runs []int64
	var mu sync.Mutex
	to, err := h.Every(testTick, func() {
		mu.Lock()
		runs = append(runs, fake.Nanotime())
		mu.Unlock()
	})
	require.NoError(t, err)
	advance(fake, testTick) // the first run is claimed and handed over
	require.True(t, to.Reset(10*testTick))
	require.Positive(t, exec.runHeld(), "the claimed run was handed over")
	mu.Lock()
	assert.Empty(t, runs, "the run claimed before Reset does not start")
	mu.Unlock()
	assert.Equal(t, uint64(1), h.Stats().PeriodicSkipped, "the revoked run is counted")
	advance(fake, 10*testTick) // due at 110ms, the end of its tick
	exec.runHeld()
	mu.Lock()
	assert.Equal(t, []int64{int64(11 * testTick)}, runs, "the next run at the new deadline")
	mu.Unlock()
	h.Stop()
	exec.runHeld()
}

// TestEveryResetDuringARunIsNotLost: Reset(0) while a run is in progress
// asks for a run now; it starts as soon as the one in progress returns,
// not a period later, as time.Ticker.Reset never loses the tick.
func TestEveryResetDuringARunIsNotLost(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(goExecutor{}))
	var runs atomic.Int32
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	to, err := h.Every(time.Hour, func() {
		if runs.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
	})
	require.NoError(t, err)
	fake.WaitAsleep()
	fake.Jump(time.Hour + testTick) // not Advance: it would wait for the blocked run
	<-entered
	require.True(t, to.Reset(0))
	advance(fake, 2*testTick) // the Reset's run comes due while the first runs
	assert.Equal(t, int32(1), runs.Load())
	close(release)
	fake.Settle()
	assert.Equal(t, int32(2), runs.Load(), "the run Reset asked for ran once the first returned")
	assert.Zero(t, h.Stats().PeriodicSkipped)
}

// TestEveryLateWorkerCountsTheRunsItSkipped: a worker that wakes with
// twenty runs due runs once and counts the nineteen it skipped.
func TestEveryLateWorkerCountsTheRunsItSkipped(t *testing.T) {
	h, fake := newFakeTimer(t)
	runs := 0
	_, err := h.Every(testTick, func() { runs++ })
	require.NoError(t, err)
	fake.WaitAsleep()
	fake.Jump(20 * testTick) // in one step, as after a suspend: runs due at 1..20 ticks
	fake.WaitAsleep()
	s := h.Stats()
	assert.Equal(t, 1, runs)
	assert.Equal(t, uint64(1), s.PeriodicRuns)
	assert.Equal(t, uint64(19), s.PeriodicSkipped)
}

// TestEveryInlineRunsInTheOrderOfTheDeadlinesTheyRunFor: with pool.Inline,
// a periodic run due at 15ms runs before a one-shot due at 19ms in the
// same tick, (10ms, 20ms], though the periodic timeout's next deadline,
// 30ms, is later.
func TestEveryInlineRunsInTheOrderOfTheDeadlinesTheyRunFor(t *testing.T) {
	h, fake := newFakeTimer(t)
	var order []string
	_, err := h.Every(15*time.Millisecond, func() { order = append(order, "every") })
	require.NoError(t, err)
	_, err = h.AfterFunc(19*time.Millisecond, func() { order = append(order, "one-shot") })
	require.NoError(t, err)
	advance(fake, 2*testTick)
	assert.Equal(t, []string{"every", "one-shot"}, order)
}
