package hashedwheel

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests of user code that the worker calls (a Cancelled hook, a
// Scheduler's Next) and that stops the timer, calls runtime.Goexit or
// panics: nothing else is harmed, on a pool and inline.

// TestFaultHookStopsTheTimerWhileOtherHooksWait: the first of several
// Cancelled hooks of one pass schedules and cancels more hooked timeouts,
// then calls Stop, whose shutdown adds those cancellations to the hooks
// still to call. The worker survives, every hook runs once, on the worker, and
// Stop returns the pending timeout.
func TestFaultHookStopsTheTimerWhileOtherHooksWait(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			h, fake, _ := newLoggingFakeTimer(t, inline)
			pending := mustSchedule(t, h, noopTask, time.Hour)
			stopped := make(chan []Timeout, 1)
			late := []*hookTask{{}, {}, {}, {}, {}, {}, {}, {}}
			first := &hookTask{onCancel: func(Timeout) {
				for _, task := range late {
					if to, err := h.NewTimeout(task, time.Hour); err == nil {
						to.Cancel()
					}
				}
				stopped <- h.Stop()
			}}
			hooks := []*hookTask{first, {}, {}}
			var tos []Timeout
			for _, task := range hooks {
				tos = append(tos, mustSchedule(t, h, task, time.Hour))
			}
			advance(fake, testTick) // all in the wheel
			for _, to := range tos {
				require.True(t, to.Cancel())
			}
			faultWithin(t, "a pass whose hook calls Stop", func() { advance(fake, testTick) })
			select {
			case got := <-stopped:
				require.Equal(t, []Timeout{pending}, got)
			case <-time.After(faultWaitTimeout):
				require.Fail(t, "Stop from the hook did not return")
			}
			for i, task := range append(hooks, late...) {
				require.Equal(t, int32(1), task.cancelled.Load(), "hook calls of timeout %d", i)
			}
			faultBalance(t, h, int64(len(hooks)+len(late)+1), 0, int64(len(hooks)+len(late)), 1)
		})
	}
}

var _ = runtime.Goexit

// TestStopContextDoneAfterTheWorkerStoppedReturnsTheTimeouts: a
// StopContext whose context is already done, called once the worker has
// stopped, returns the pending timeouts every time, as its doc says; the
// earlier StopContext that gave up while a hook held the worker returned
// none.
func TestStopContextDoneAfterTheWorkerStoppedReturnsTheTimeouts(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 20 {
		h, fake := newFakeTimer(t)
		pending := mustSchedule(t, h, noopTask, time.Hour)
		entered, release := make(chan struct{}, 1), make(chan struct{})
		hooked := mustSchedule(t, h, blockingHook{entered, release}, time.Hour)
		advance(fake, testTick) // in the wheel
		require.True(t, hooked.Cancel())
		fake.Jump(testTick)
		<-entered // the worker is held in the hook
		got, err := h.StopContext(done)
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, got, "the worker had not stopped")
		close(release)
		<-h.done // the worker stopped
		got, _ = h.StopContext(done)
		require.Equal(t, []Timeout{pending}, got, "call %d: the worker had stopped", i)
	}
}

// TestStopFromAnotherTimersTaskWaitsForItsTasks: b.Stop called from a task
// of another timer a, on a pool, waits for b's task still running, as a
// Stop from outside both timers does; only a task of b itself is spared
// the wait.
func TestStopFromAnotherTimersTaskWaitsForItsTasks(t *testing.T) {
	a := startTimer(t, WithTickDuration(time.Millisecond))
	b := startTimer(t, WithTickDuration(time.Millisecond))
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	_, err := b.AfterFunc(0, func() {
		close(started)
		<-release
		finished.Store(true)
	})
	require.NoError(t, err)
	<-started
	stopped := make(chan bool, 1) // whether b's task had finished when Stop returned
	_, err = a.AfterFunc(0, func() {
		b.Stop()
		stopped <- finished.Load()
	})
	require.NoError(t, err)
	select {
	case <-stopped:
		close(release)
		require.Fail(t, "b.Stop, called from a's task, returned while b's task ran")
	case <-time.After(100 * time.Millisecond): // Stop waits, as it must
	}
	close(release)
	require.True(t, <-stopped, "b.Stop returned before b's task did")
}
