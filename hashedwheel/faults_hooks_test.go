package hashedwheel

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/pool"
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

// nextFaults are what a Scheduler's Next does on its second call, the
// worker's first: call runtime.Goexit (as t.FailNow does), panic, or stop
// the timer.
var nextFaults = []string{"Goexit", "panic", "Stop"}

// TestFaultNextHarmsNothingDueWithIt: a Scheduler whose Next, called by
// the worker as it claims a run, calls runtime.Goexit, panics or calls
// Stop, with one-shot timeouts and an Every due in the same tick, claimed
// before it in the walk, inline and on a pool, on the fake and the real
// clock. The one-shots run once; the Every is not left claimed: it runs
// again, or, after Stop, is returned by it; Goexit and panic end the
// schedule, logged and counted, after its run due then; Stop returns the
// timeouts still pending, the schedule's among them.
func TestFaultNextHarmsNothingDueWithIt(t *testing.T) {
	for _, fault := range nextFaults {
		for _, inline := range []bool{true, false} {
			for _, fake := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/inline=%v/fake=%v", fault, inline, fake), func(t *testing.T) {
					faultNextHarmsNothing(t, fault, inline, fake)
				})
			}
		}
	}
}

func faultNextHarmsNothing(t *testing.T, fault string, inline, fake bool) {
	tick := testTick
	var h *HashedWheelTimer
	var clk *clock.Fake
	logs, logger := newLogBuffer()
	opts := []Option{WithLogger(logger)}
	if inline {
		opts = append(opts, WithExecutor(pool.Inline))
	}
	if fake {
		clk = clock.NewFake(time.Now())
		h = newTimerOn(t, clk, opts...)
	} else {
		tick = 50 * time.Millisecond // wide enough that what is made together shares a tick
		h = startTimer(t, append(opts, WithTickDuration(tick))...)
	}
	due := 3*tick + tick/2
	total := newFaultCounter()
	everyRuns := newFaultCounter()
	every, err := h.Every(due, everyRuns.add)
	require.NoError(t, err)
	oneShots := make([]*faultCountingTask, 5)
	for i := range oneShots {
		oneShots[i] = &faultCountingTask{total: total}
		mustSchedule(t, h, oneShots[i], due)
	}
	stopped := make(chan []Timeout, 1)
	calls := 0
	scheduleRuns := newFaultCounter()
	schedule, err := h.ScheduleFunc(schedulerFunc(func(after time.Time) time.Time {
		calls++
		if calls == 2 {
			switch fault {
			case "Goexit":
				runtime.Goexit()
			case "panic":
				panic("Next exploded")
			case "Stop":
				stopped <- h.Stop()
			}
		}
		return after.Add(due)
	}), scheduleRuns.add)
	require.NoError(t, err)
	pending := mustSchedule(t, h, noopTask, time.Hour)
	if fake {
		faultWithin(t, "Advance past a faulty Next", func() { clk.Advance(due + tick) })
	}
	total.waitFor(t, int64(len(oneShots)), "one-shots due with the schedule's run")
	if fault == "Stop" {
		var got []Timeout
		select {
		case got = <-stopped:
		case <-time.After(faultWaitTimeout):
			require.Fail(t, "Stop from Next did not return")
		}
		require.ElementsMatch(t, []Timeout{every, schedule, pending}, got)
		faultWithin(t, "Stop after Stop from Next", func() { h.Stop() })
	} else {
		if fake {
			faultWithin(t, "Advance after a faulty Next", func() { clk.Advance(2 * due) })
		}
		everyRuns.waitFor(t, 2, "runs of the Every due with the schedule's run")
		scheduleRuns.waitFor(t, 1, "the schedule's run due when Next failed")
		var got []Timeout
		faultWithin(t, "Stop", func() { got = h.Stop() })
		require.ElementsMatch(t, []Timeout{every, pending}, got)
		require.True(t, schedule.IsExpired(), "the schedule ended")
		require.Equal(t, uint64(1), h.Stats().ScheduleErrors)
		require.Contains(t, logs.String(), "schedule ended")
	}
	for i, task := range oneShots {
		require.Equal(t, int64(1), task.runs.Load(), "runs of one-shot %d", i)
	}
	require.LessOrEqual(t, scheduleRuns.load(), int64(1), "the schedule's runs")
}

// TestInlineLateWorkerRunsEachTickInDeadlineOrder: a worker several ticks
// late runs, inline, an Every's run due early in a tick before a one-shot
// due later in that tick, though the Every's next deadline, which it
// holds by then, is several periods on.
func TestInlineLateWorkerRunsEachTickInDeadlineOrder(t *testing.T) {
	h, fake := newFakeTimer(t)
	var order []string
	_, err := h.Every(testTick, func() { order = append(order, "every") })
	require.NoError(t, err)
	mustSchedule(t, h, TaskFunc(func(Timeout) { order = append(order, "one-shot") }), testTick+testTick/2)
	fake.WaitAsleep()
	fake.Jump(5 * testTick) // the worker wakes five ticks late
	fake.WaitAsleep()
	require.NotEmpty(t, order)
	require.Equal(t, []string{"every", "one-shot"}, order[:2], "due at 1 and 1.5 ticks")
}

// TestCancelRacingStopRunsItsHookOnTheWorker: Cancels racing Stop, some
// of them after Stop's shutdown closed the queue they report to. Each
// Cancel that returned true has its Cancelled hook called once, on the
// worker goroutine, as the TimerTask doc says, never on the goroutine
// that called Cancel; Stop returns exactly the others.
func TestCancelRacingStopRunsItsHookOnTheWorker(t *testing.T) {
	rounds, n := 200, 32
	if testing.Short() {
		rounds = 20
	}
	for range rounds {
		h := startTimer(t, WithTickDuration(time.Millisecond), WithLogger(discardLogger()))
		var offWorker, hooks atomic.Int64
		task := &hookTask{onCancel: func(Timeout) {
			hooks.Add(1)
			if goid.Current() != h.workerID.Load() {
				offWorker.Add(1)
			}
		}}
		tos := make([]Timeout, n)
		for i := range tos {
			tos[i] = mustSchedule(t, h, task, time.Hour)
		}
		require.Eventually(t, func() bool { return tos[n-1].(*timeout).currentState() == stateScheduled },
			faultWaitTimeout, time.Millisecond, "taken into the wheel")
		var cancelled atomic.Int64
		start, wait := concurrently(n, func(i int) {
			if tos[i].Cancel() {
				cancelled.Add(1)
			}
		})
		start()
		stopped := h.Stop()
		wait()
		require.Zero(t, offWorker.Load(), "hooks called off the worker goroutine")
		require.Equal(t, cancelled.Load(), hooks.Load(), "one hook per successful Cancel")
		require.Equal(t, int64(n)-cancelled.Load(), int64(len(stopped)), "Stop returns the others")
	}
}
