package hashedwheel

import (
	"fmt"
	"runtime"
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
