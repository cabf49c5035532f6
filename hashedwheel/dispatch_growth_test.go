package hashedwheel

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// manyBlockingTasks is more tasks than a dispatch starts drain functions
// for, on any machine: the test sees whether the dispatch grows.
func manyBlockingTasks() int { return 4*runtime.GOMAXPROCS(0) + 16 }

// TestASlowCancelledHookHoldsUpNoGrowth: a Cancelled hook that blocks on
// the worker, in the pass after a dispatch of tasks that block too, holds
// up none of them: every one starts on the default pool while the hook
// still blocks. A dispatch grown by the worker after the pass's hooks
// started only its first few tasks until the hook returned.
func TestASlowCancelledHookHoldsUpNoGrowth(t *testing.T) {
	n := manyBlockingTasks()
	h := startTimer(t, WithTickDuration(10*time.Millisecond), WithLogger(discardLogger()))
	hookEntered, releaseHook := make(chan struct{}), make(chan struct{})
	hooked := mustSchedule(t, h, &hookTask{onCancel: func(Timeout) {
		close(hookEntered)
		<-releaseHook
	}}, time.Hour)
	var once sync.Once
	started, release := make(chan struct{}, n), make(chan struct{})
	for range n {
		mustSchedule(t, h, TaskFunc(func(Timeout) {
			once.Do(func() { hooked.Cancel() }) // its hook runs on the worker's next pass
			started <- struct{}{}
			<-release
		}), 20*time.Millisecond)
	}
	defer close(release)
	defer close(releaseHook)
	for i := range n {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			require.Fail(t, "tasks due together wait for a Cancelled hook",
				"%d of %d started; hook entered: %v", i, n, isClosed(hookEntered))
		}
	}
	assert.False(t, isClosed(releaseHook), "every task started while the hook blocked")
}

// TestTasksDueTogetherStartTogetherOnAFakeClock: tasks due in one tick
// that each wait until all have started, on a clock.Fake whose Advance
// moves no time until they return: every one starts, up to the pool's
// size, whatever the number of processors, and Advance returns. A
// dispatch grown only as fake time moved started two per processor, and
// Advance waited forever.
func TestTasksDueTogetherStartTogetherOnAFakeClock(t *testing.T) {
	n := manyBlockingTasks()
	for name, size := range map[string]int{"pool of their number": n, "default pool": dispatch.DefaultParallelism} {
		t.Run(name, func(t *testing.T) {
			exec, err := antspool.New(size)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, exec.ReleaseContext(context.Background())) }) // after the timer's Stop
			fake := clock.NewFake(time.Now())
			h := newTimerOn(t, fake, WithExecutor(exec))
			fake.WaitAsleep()
			var arrived atomic.Int64
			all, abort := make(chan struct{}), make(chan struct{})
			for range n {
				mustSchedule(t, h, TaskFunc(func(Timeout) {
					if arrived.Add(1) == int64(n) {
						close(all)
					}
					select { // a barrier: each waits for the others
					case <-all:
					case <-abort:
					}
				}), testTick)
			}
			advanced := make(chan struct{})
			go func() {
				defer close(advanced)
				fake.Advance(2 * testTick)
			}()
			select {
			case <-advanced:
			case <-time.After(10 * time.Second):
				got := arrived.Load()
				close(abort)
				<-advanced
				require.Fail(t, "tasks due together did not all start", "%d of %d started", got, n)
			}
			assert.Equal(t, int64(n), arrived.Load(), "every task ran by the time Advance returned")
		})
	}
}

// sleepCounter is a clock whose sleepers count their sleeps: how often
// the worker woke.
type sleepCounter struct {
	clock.Clock
	sleeps atomic.Int64
}

func (c *sleepCounter) Sleeper() (clockwork.Sleeper, error) {
	s, err := c.Clock.Sleeper()
	return countingSleeper{s, &c.sleeps}, err
}

// countingSleeper is a clock's sleeper, whose Sleep it counts.
type countingSleeper struct {
	clockwork.Sleeper
	sleeps *atomic.Int64
}

func (s countingSleeper) Sleep(until int64) {
	s.sleeps.Add(1)
	s.Sleeper.Sleep(until)
}

// TestWaitingForAPoolGoroutineDoesNotPoll: on a pool of one goroutine held
// by a task, a task due with it waits for the goroutine; meanwhile the
// worker wakes no more often than its ticks, not every quarter of a
// millisecond to see whether the pool grew. Real time is the subject: over
// half a second the worker sleeps a handful of times at a 100ms tick, where
// polling woke it hundreds of times. Once the goroutine frees up, the
// waiting task runs.
func TestWaitingForAPoolGoroutineDoesNotPoll(t *testing.T) {
	const tick, window = 100 * time.Millisecond, 500 * time.Millisecond
	exec, err := antspool.New(1)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, exec.ReleaseContext(context.Background())) }) // after the timer's Stop
	c := &sleepCounter{Clock: clock.NewReal()}
	h := startTimer(t, WithTickDuration(tick), WithClock(c), WithExecutor(exec), WithLogger(discardLogger()))
	holding, release, second := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	for range 2 {
		mustSchedule(t, h, TaskFunc(func(Timeout) {
			if first.CompareAndSwap(false, true) {
				close(holding)
				<-release
				return
			}
			close(second)
		}), tick)
	}
	select {
	case <-holding:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the first task never ran")
	}
	before := c.sleeps.Load()
	time.Sleep(window) // real time is the subject: the worker's wake-ups over it
	woke := c.sleeps.Load() - before
	assert.False(t, isClosed(second), "the second task waits for the pool's one goroutine")
	close(release)
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the second task never ran once the goroutine was free")
	}
	assert.LessOrEqual(t, woke, int64(2*window/tick), "the worker woke %d times in %v at a %v tick", woke, window, tick)
}
