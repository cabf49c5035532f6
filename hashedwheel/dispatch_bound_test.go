package hashedwheel

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/antspool"
)

// TestTicksBeyondThePoolsSizeWaitInTheTimer: on a pool of two goroutines,
// the two tasks of one tick hold both; those of two later ticks wait in
// the timer, not in a call to the pool's Execute: the worker goes on
// expiring tick after tick meanwhile. Never more than two tasks run at
// once, and as each goroutine frees up, the next tick's task starts on it,
// in the order the ticks came due. A worker that waited in Execute claimed
// nothing after the second tick until a goroutine freed up.
func TestTicksBeyondThePoolsSizeWaitInTheTimer(t *testing.T) {
	const size = 2
	exec, err := antspool.New(size)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, exec.ReleaseContext(context.Background())) }) // after the timer's Stop
	h := startTimer(t, WithTickDuration(testTick), WithExecutor(exec), WithLogger(discardLogger()))
	var running, most atomic.Int32
	started := make(chan int, 3*size)
	permit, release := make(chan struct{}, 3*size), make(chan struct{})
	defer close(release)
	for tick := range 3 {
		for range size {
			mustSchedule(t, h, TaskFunc(func(Timeout) {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				started <- tick
				select {
				case <-permit:
				case <-release:
				}
			}), time.Duration(1+3*tick)*testTick)
		}
	}
	awaitStart := func(want int) {
		t.Helper()
		select {
		case tick := <-started:
			assert.Equal(t, want, tick, "the tick of the task that started")
		case <-time.After(10 * time.Second):
			require.Fail(t, "no task started", "waiting for one of tick %d", want)
		}
	}
	awaitStart(0)
	awaitStart(0)
	require.Eventually(t, func() bool { return h.Stats().Expired == 3*size }, 10*time.Second, testTick,
		"the worker claims the later ticks' tasks while the pool is full")
	select {
	case tick := <-started:
		require.Fail(t, "a task started while the pool was full", "of tick %d", tick)
	default:
	}
	for _, tick := range []int{1, 1, 2, 2} {
		permit <- struct{}{} // a task returns: its goroutine starts the next tick's
		awaitStart(tick)
	}
	assert.LessOrEqual(t, most.Load(), int32(size), "tasks running at once")
}
