package hashedwheel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Faults: executors that reject, panic or block; tasks that panic, block
// forever, stop the timer or re-schedule themselves; Stop racing with
// NewTimeout and Cancel. In each the worker keeps ticking or stops cleanly,
// every accepted timeout fires, is cancelled or is returned by Stop, the
// counters add up, and no goroutine is left behind (TestMain checks).

// faultWaitTimeout bounds every wait for asynchronous work: far more than
// the work needs on a loaded machine, so that a hang fails instead.
const faultWaitTimeout = 20 * time.Second

// faultCounter counts events and lets a test wait until a count is reached.
type faultCounter struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int64
}

func newFaultCounter() *faultCounter {
	c := &faultCounter{}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *faultCounter) add() {
	c.mu.Lock()
	c.n++
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *faultCounter) load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// waitFor waits until the count reaches n, or fails after faultWaitTimeout.
func (c *faultCounter) waitFor(tb testing.TB, n int64, what string) {
	tb.Helper()
	timedOut := false
	timer := time.AfterFunc(faultWaitTimeout, func() {
		c.mu.Lock()
		timedOut = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n < n && !timedOut {
		c.cond.Wait()
	}
	require.GreaterOrEqual(tb, c.n, n, "%s: %d of %d after %v", what, c.n, n, faultWaitTimeout)
}

// faultWithin runs f on its own goroutine and fails if it does not return
// within faultWaitTimeout: for calls that must not block.
func faultWithin(tb testing.TB, what string, f func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(faultWaitTimeout):
		require.Fail(tb, fmt.Sprintf("%s blocked for %v", what, faultWaitTimeout))
	}
}

// faultBalance checks the counters of a stopped timer against what the
// test counted itself.
func faultBalance(tb testing.TB, h *HashedWheelTimer, scheduled, ran, cancelled, returned int64) {
	tb.Helper()
	type counts struct {
		pending                                       int64
		scheduled, expired, cancelled, returnedByStop uint64
	}
	s := h.Stats()
	require.Equal(tb,
		counts{0, uint64(scheduled), uint64(ran), uint64(cancelled), uint64(returned)},
		counts{s.Pending, s.Scheduled, s.Expired, s.Cancelled, s.ReturnedByStop},
		"Stats %+v; the test counted scheduled %d, ran %d, cancelled %d, returned by Stop %d",
		s, scheduled, ran, cancelled, returned)
	require.Equal(tb, scheduled, ran+cancelled+returned,
		"scheduled %d != ran %d + cancelled %d + returned %d", scheduled, ran, cancelled, returned)
}

// faultCountingTask counts its runs, per timeout and in total.
type faultCountingTask struct {
	runs  atomic.Int64
	total *faultCounter
}

func (f *faultCountingTask) Run(Timeout) {
	f.runs.Add(1)
	f.total.add()
}

// faultSchedule schedules n counting tasks, the i-th due after
// (i%spread+1) ticks, and returns them with their timeouts, failing the
// test if one is refused: call it on the test's goroutine.
func faultSchedule(tb testing.TB, h *HashedWheelTimer, total *faultCounter, n, spread int) ([]*faultCountingTask, []Timeout) {
	tb.Helper()
	tasks, tos, err := faultTrySchedule(h, total, n, spread)
	require.NoError(tb, err)
	return tasks, tos
}

// faultTrySchedule is faultSchedule returning the first error instead of
// failing the test, for other goroutines.
func faultTrySchedule(h *HashedWheelTimer, total *faultCounter, n, spread int) ([]*faultCountingTask, []Timeout, error) {
	tasks := make([]*faultCountingTask, n)
	tos := make([]Timeout, n)
	for i := range tasks {
		tasks[i] = &faultCountingTask{total: total}
		to, err := h.NewTimeout(tasks[i], time.Duration(i%spread+1)*testTick-time.Millisecond)
		if err != nil {
			return nil, nil, err
		}
		tos[i] = to
	}
	return tasks, tos, nil
}

// TestFaultExecutorRejectsOrPanics: an executor that refuses every task, or
// panics without running it. Every expired task still runs, exactly once,
// on a goroutine of its own; the failures are counted and logged; the
// worker keeps ticking.
func TestFaultExecutorRejectsOrPanics(t *testing.T) {
	for _, mode := range []string{"rejects", "panics"} {
		t.Run(mode, func(t *testing.T) {
			exec := &refusingExecutor{panics: mode == "panics"}
			logs, logger := newLogBuffer()
			h, fake := newFakeTimer(t, WithExecutor(exec), WithLogger(logger))
			total := newFaultCounter()
			tasks, tos := faultSchedule(t, h, total, 40, 4)
			fake.WaitAsleep()
			advance(fake, 4*testTick)
			total.waitFor(t, int64(len(tasks)), "tasks run despite the executor")
			// The worker still ticks: a later timeout fires too.
			mustSchedule(t, h, &faultCountingTask{total: total}, testTick)
			fake.WaitAsleep()
			advance(fake, 2*testTick)
			total.waitFor(t, int64(len(tasks))+1, "a timeout scheduled after the failures")
			for i, task := range tasks {
				n := task.runs.Load()
				require.True(t, n == 1 && tos[i].IsExpired(), "task %d ran %d times (expired %v)", i, n, tos[i].IsExpired())
			}
			s := h.Stats()
			require.Positive(t, s.ExecutorFailures, "ExecutorFailures")
			require.Equal(t, uint64(exec.calls.Load()), s.ExecutorFailures,
				"ExecutorFailures %d, executor called %d times", s.ExecutorFailures, exec.calls.Load())
			require.Contains(t, logs.String(), "executor refused", "no warning logged")
			require.Empty(t, h.Stop(), "Stop returned timeouts, want none")
			faultBalance(t, h, int64(len(tasks))+1, total.load(), 0, 0)
		})
	}
}

// TestFaultExecutorPanicsAfterRunningTheTask: an executor that runs the
// task and then panics (it broke after doing its job). The timer cannot
// know whether the task ran; it must still not run it twice.
func TestFaultExecutorPanicsAfterRunningTheTask(t *testing.T) {
	exec := executorFunc(func(task func()) error {
		task()
		panic("executor broke after running the task")
	})
	h, fake := newFakeTimer(t, WithExecutor(exec))
	total := newFaultCounter()
	tasks, _ := faultSchedule(t, h, total, 8, 2)
	fake.WaitAsleep()
	advance(fake, 2*testTick)
	total.waitFor(t, int64(len(tasks)), "tasks run")
	h.Stop()
	// Any duplicate run happens on a goroutine of the timer's: give it the
	// chance to show up before counting. (Time is the subject here: a
	// duplicate has no event to wait for.)
	time.Sleep(50 * time.Millisecond)
	for i, task := range tasks {
		assert.Equal(t, int64(1), task.runs.Load(), "task %d, want exactly one run", i)
	}
}

// TestFaultExecutorRunsEachTaskTwice: an executor that runs every task it
// is given twice, on two goroutines at once, either of which may run late,
// after the worker has reused what the task ran for later timeouts. Every
// timer task still runs exactly once.
func TestFaultExecutorRunsEachTaskTwice(t *testing.T) {
	var running sync.WaitGroup
	exec := executorFunc(func(task func()) error {
		running.Add(2)
		for range 2 {
			go func() {
				defer running.Done()
				task()
			}()
		}
		return nil
	})
	h, fake := newFakeTimer(t, WithExecutor(exec))
	total := newFaultCounter()
	tasks, _ := faultSchedule(t, h, total, 256, 8)
	fake.WaitAsleep()
	for range 8 {
		advance(fake, testTick)
		fake.WaitAsleep()
	}
	total.waitFor(t, int64(len(tasks)), "tasks run")
	h.Stop()
	running.Wait()
	for i, task := range tasks {
		assert.Equal(t, int64(1), task.runs.Load(), "task %d, want exactly one run", i)
	}
}

// TestFaultExecutorBlocks: an executor that blocks for a long time in
// Execute holds up the worker, but never a producer: NewTimeout, Cancel,
// PendingTimeouts and Stats return at once. Once it lets go the worker
// catches up and nothing is lost; a Stop issued meanwhile waits for it and
// then returns the rest.
func TestFaultExecutorBlocks(t *testing.T) {
	for _, stopWhileBlocked := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopWhileBlocked=%v", stopWhileBlocked), func(t *testing.T) {
			entered := make(chan struct{})
			release := make(chan struct{})
			var blocked atomic.Bool
			exec := executorFunc(func(task func()) error {
				if blocked.CompareAndSwap(false, true) {
					entered <- struct{}{}
					<-release
				}
				task() // inline once released
				return nil
			})
			h, fake := newFakeTimer(t, WithExecutor(exec))
			total := newFaultCounter()
			first := &faultCountingTask{total: total}
			mustSchedule(t, h, first, testTick/2)
			later := &faultCountingTask{total: total}
			laterTo := mustSchedule(t, h, later, 5*testTick)
			fake.WaitAsleep()

			fake.Jump(testTick) // the worker claims first and blocks in Execute
			<-entered
			var extra Timeout
			var extraTask = &faultCountingTask{total: total}
			faultWithin(t, "producers while the executor blocks", func() {
				var err error
				extra, err = h.NewTimeout(extraTask, 2*testTick)
				assert.NoError(t, err) // not the test's goroutine: no require
				assert.True(t, laterTo.Cancel(), "Cancel failed while the worker was blocked")
				_ = h.PendingTimeouts()
				_ = h.Stats()
			})
			if t.Failed() {
				close(release)
				return
			}
			if !stopWhileBlocked {
				close(release)
				fake.WaitAsleep()
				advance(fake, 3*testTick)
				total.waitFor(t, 2, "first and extra")
				require.Empty(t, h.Stop())
				faultBalance(t, h, 3, 2, 1, 0)
				return
			}
			stopped := make(chan []Timeout)
			go func() { stopped <- h.Stop() }()
			close(release)
			var res []Timeout
			select {
			case res = <-stopped:
			case <-time.After(faultWaitTimeout):
				require.Fail(t, "Stop did not return once the executor let go")
			}
			total.waitFor(t, 1, "first")
			require.Equal(t, []Timeout{extra}, res, "Stop returns the extra timeout")
			require.True(t, extra.IsCancelled(), "the extra timeout is cancelled by Stop")
			require.Zero(t, extraTask.runs.Load(), "the extra timeout never ran")
			faultBalance(t, h, 3, 1, 1, 1)
		})
	}
}

// newLoggingFakeTimer returns a timer on a fresh fake clock whose logger
// writes to the returned buffer, running its tasks inline on the worker or
// on its own pool.
func newLoggingFakeTimer(t *testing.T, inline bool) (*HashedWheelTimer, *clock.Fake, *logBuffer) {
	logs, logger := newLogBuffer()
	opts := []Option{WithLogger(logger)}
	if inline {
		opts = append(opts, WithExecutor(pool.Inline))
	}
	fake := clock.NewFake(time.Now())
	return newTimerOn(t, fake, opts...), fake, logs
}

// TestFaultTaskPanics: tasks and Cancelled hooks that panic, run inline on
// the worker or on the timer's pool. Each panic is recovered and logged;
// the worker keeps ticking; the counts add up.
func TestFaultTaskPanics(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			h, fake, logs := newLoggingFakeTimer(t, inline)
			total := newFaultCounter()
			panicky := make([]*hookTask, 5)
			for i := range panicky {
				panicky[i] = &hookTask{onRun: func(Timeout) {
					total.add()
					panic("task exploded")
				}}
				mustSchedule(t, h, panicky[i], testTick/2)
			}
			hooked := &hookTask{
				onRun:    func(Timeout) { panic("task exploded") },
				onCancel: func(Timeout) { panic("hook exploded") },
			}
			hookedTo := mustSchedule(t, h, hooked, 10*testTick)
			fake.WaitAsleep()
			advance(fake, testTick)
			hookedTo.Cancel()
			advance(fake, testTick)
			// The worker survived: timeouts after the panics fire.
			tasks, _ := faultSchedule(t, h, total, 10, 3)
			fake.WaitAsleep()
			advance(fake, 3*testTick)
			total.waitFor(t, int64(len(panicky)+len(tasks)), "panicking tasks and tasks after them")
			for i, p := range panicky {
				require.Equal(t, int32(1), p.runs.Load(), "runs of panicking task %d", i)
			}
			require.Equal(t, int32(1), hooked.cancelled.Load(), "hook calls")
			require.Zero(t, hooked.runs.Load(), "runs of the cancelled task")
			h.Stop()
			faultBalance(t, h, int64(len(panicky)+1+len(tasks)), int64(len(panicky)+len(tasks)), 1, 0)
			if inline {
				// On the pool the panic is logged by the pool's wrapper or
				// ours; inline it must be ours.
				require.Equal(t, len(panicky), strings.Count(logs.String(), "TimerTask panicked"),
					"task panics logged: %s", logs.String())
			}
			require.Contains(t, logs.String(), "Cancelled hook panicked", "hook panic not logged")
		})
	}
}

// TestFaultTaskCallsGoexit: tasks and Cancelled hooks that call
// runtime.Goexit, as t.FailNow and require do when called from a callback,
// inline on the worker or on the timer's pool. Each ends only its own
// goroutine and is logged: every other task due with them runs once, the
// worker carries on, later timeouts fire, Stop returns and the counts add
// up.
func TestFaultTaskCallsGoexit(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			h, fake, logs := newLoggingFakeTimer(t, inline)
			total := newFaultCounter()
			const n, exitEvery = 200, 20
			tasks := make([]*hookTask, n)
			for i := range tasks {
				tasks[i] = &hookTask{onRun: func(Timeout) {
					total.add()
					if i%exitEvery == 0 {
						runtime.Goexit()
					}
				}}
				mustSchedule(t, h, tasks[i], testTick/2)
			}
			hooked := make([]*hookTask, 4)
			var hookedTos []Timeout
			for i := range hooked {
				hooked[i] = &hookTask{onCancel: func(Timeout) {
					if i%2 == 0 {
						runtime.Goexit()
					}
				}}
				hookedTos = append(hookedTos, mustSchedule(t, h, hooked[i], 10*testTick))
			}
			fake.WaitAsleep()
			advance(fake, testTick)
			total.waitFor(t, n, "tasks due together with tasks calling Goexit")
			for _, to := range hookedTos {
				require.True(t, to.Cancel())
			}
			advance(fake, testTick)
			// The worker survived: timeouts after the Goexits fire.
			later, _ := faultSchedule(t, h, total, 10, 3)
			fake.WaitAsleep()
			advance(fake, 3*testTick)
			total.waitFor(t, int64(n+len(later)), "tasks after the Goexits")
			pending := mustSchedule(t, h, noopTask, time.Hour)
			var stopped []Timeout
			faultWithin(t, "Stop after tasks called Goexit", func() { stopped = h.Stop() })
			require.Equal(t, []Timeout{pending}, stopped)
			for i, task := range tasks {
				require.Equal(t, int32(1), task.runs.Load(), "runs of task %d", i)
			}
			for i, task := range hooked {
				require.Equal(t, int32(1), task.cancelled.Load(), "hook calls of timeout %d", i)
			}
			faultBalance(t, h, int64(n+len(hooked)+len(later)+1), int64(n+len(later)), int64(len(hooked)), 1)
			require.Equal(t, n/exitEvery, strings.Count(logs.String(), "TimerTask called runtime.Goexit"),
				"task Goexits logged: %s", logs.String())
			require.Equal(t, len(hooked)/2, strings.Count(logs.String(), "Cancelled hook called runtime.Goexit"),
				"hook Goexits logged")
		})
	}
}

// TestFaultHookCallsGoexitDuringStop: a Cancelled hook that Stop's
// shutdown calls, on the worker, calls runtime.Goexit: the other hooks
// still run once, and Stop returns the pending timeouts.
func TestFaultHookCallsGoexitDuringStop(t *testing.T) {
	h, fake := newFakeTimer(t)
	hooks := make([]*hookTask, 6)
	for i := range hooks {
		hooks[i] = &hookTask{onCancel: func(Timeout) {
			if i%3 == 0 {
				runtime.Goexit()
			}
		}}
	}
	fake.WaitAsleep()
	var queued []Timeout // cancelled before the worker took them in: Stop's shutdown calls their hooks
	for _, task := range hooks {
		queued = append(queued, mustSchedule(t, h, task, time.Hour))
	}
	for _, to := range queued {
		require.True(t, to.Cancel())
	}
	pending := mustSchedule(t, h, noopTask, time.Hour)
	var stopped []Timeout
	faultWithin(t, "Stop with hooks calling Goexit", func() { stopped = h.Stop() })
	require.Equal(t, []Timeout{pending}, stopped)
	for i, task := range hooks {
		require.Equal(t, int32(1), task.cancelled.Load(), "hook calls of timeout %d", i)
	}
	faultBalance(t, h, int64(len(hooks)+1), 0, int64(len(hooks)), 1)
}

// faultBlockingTask blocks until release is closed.
type faultBlockingTask struct {
	started chan struct{}
	release chan struct{}
	done    chan struct{}
}

func newFaultBlockingTask() *faultBlockingTask {
	return &faultBlockingTask{started: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
}

func (b *faultBlockingTask) Run(Timeout) {
	close(b.started)
	<-b.release
	close(b.done)
}

// TestFaultTaskBlocksForever: a task that never returns until the test
// releases it. On a pool the worker keeps ticking and other tasks run;
// StopContext returns at its context's end, with the timeouts or leaving
// them to the next Stop; Stop waits for the task and returns only once it
// has. Inline it holds the worker,
// but producers never wait for it, and a Stop waits for it and then
// returns everything that did not run.
func TestFaultTaskBlocksForever(t *testing.T) {
	t.Run("pool", func(t *testing.T) {
		fake := clock.NewFake(time.Now())
		h := newTimerOn(t, fake)
		blocker := newFaultBlockingTask()
		var releaseOnce sync.Once
		release := func() { releaseOnce.Do(func() { close(blocker.release) }) }
		t.Cleanup(release) // before the timer's Stop, should the test fail
		mustSchedule(t, h, blocker, 0)
		fake.WaitAsleep()
		advance(fake, testTick)
		<-blocker.started
		total := newFaultCounter()
		tasks, _ := faultSchedule(t, h, total, 20, 5)
		fake.WaitAsleep()
		advance(fake, 5*testTick)
		total.waitFor(t, int64(len(tasks)), "tasks while another blocks")
		pending := mustSchedule(t, h, &faultCountingTask{total: total}, time.Hour)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var res []Timeout
		var err error
		faultWithin(t, "StopContext with a task blocked on the pool", func() { res, err = h.StopContext(ctx) })
		require.ErrorIs(t, err, context.Canceled)

		stopped := make(chan bool)
		var later []Timeout
		go func() {
			later = h.Stop()
			stopped <- isClosed(blocker.done)
		}()
		<-h.done // the worker has exited: Stop waits for the task
		select {
		case <-stopped:
			require.Fail(t, "Stop returned while a task was running")
		default:
		}
		release()
		require.True(t, <-stopped, "Stop returned before the task did")
		require.Equal(t, []Timeout{pending}, append(res, later...), "the pending timeout, returned once")
		faultBalance(t, h, int64(len(tasks))+2, int64(len(tasks))+1, 0, 1)
	})
	t.Run("inline", func(t *testing.T) {
		h, fake := newFakeTimer(t)
		blocker := newFaultBlockingTask()
		mustSchedule(t, h, blocker, 0)
		fake.WaitAsleep()
		fake.Jump(testTick)
		<-blocker.started // the worker is stuck in the task
		total := newFaultCounter()
		var tos []Timeout
		faultWithin(t, "NewTimeout and Cancel with the worker stuck", func() {
			var err error
			_, tos, err = faultTrySchedule(h, total, 20, 5)
			if !assert.NoError(t, err) { // not the test's goroutine: no require
				return
			}
			for _, to := range tos[:5] {
				assert.True(t, to.Cancel(), "Cancel failed")
			}
		})
		require.Len(t, tos, 20)
		stopped := make(chan []Timeout)
		go func() { stopped <- h.Stop() }()
		close(blocker.release)
		var res []Timeout
		select {
		case res = <-stopped:
		case <-time.After(faultWaitTimeout):
			require.Fail(t, "Stop did not return once the task did")
		}
		<-blocker.done
		require.Len(t, res, 15, "Stop returns the 15 not cancelled")
		require.Zero(t, total.load(), "tasks ran")
		faultBalance(t, h, 21, 1, 5, 15)
	})
}

// TestFaultTaskCallsStop: a task, or a Cancelled hook, that stops its own
// timer, inline on the worker goroutine (which must not deadlock) or on a
// pool. Stop returns the timeouts that neither ran nor were cancelled;
// those claimed in the same tick as the stopping task still run; a second
// Stop returns nil; NewTimeout fails with ErrStopped.
func TestFaultTaskCallsStop(t *testing.T) {
	for _, c := range []struct {
		name   string
		inline bool
		hook   bool // Stop is called by the Cancelled hook, not by Run
	}{{"inline", true, false}, {"pool", false, false}, {"inline-hook", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if c.inline {
				opts = append(opts, WithExecutor(pool.Inline))
			}
			fake := clock.NewFake(time.Now())
			h := newTimerOn(t, fake, opts...)
			total := newFaultCounter()
			result := make(chan []Timeout, 1)
			stop := func(Timeout) { result <- h.Stop() }
			stopper := &hookTask{onRun: stop, onCancel: stop}
			// Six due in tick 0 with the stopper, six in later ticks.
			sameTick, _ := faultSchedule(t, h, total, 6, 1)
			stopperTo := mustSchedule(t, h, stopper, testTick/2)
			for i := 0; i < 6; i++ {
				mustSchedule(t, h, &faultCountingTask{total: total}, time.Duration(i+2)*testTick)
			}
			if c.hook {
				stopperTo.Cancel() // queued: its hook runs after the pass that drops it
			}
			fake.WaitAsleep()
			fake.Jump(testTick)
			var res []Timeout
			select {
			case res = <-result:
			case <-time.After(faultWaitTimeout):
				require.Fail(t, "Stop from a task did not return: deadlock")
			}
			fake.WaitAsleep() // returns once the worker has exited
			var again []Timeout
			faultWithin(t, "a second Stop", func() { again = h.Stop() })
			require.Nil(t, again, "second Stop")
			_, err := h.NewTimeout(&faultCountingTask{total: total}, 0)
			require.ErrorIs(t, err, ErrStopped, "NewTimeout after Stop")
			ran, stopperRan, cancelled := int64(len(sameTick)), int64(1), int64(0)
			if c.hook {
				stopperRan, cancelled = 0, 1
				// The pushes race the worker's passes. Cancelled before a
				// pass took it in, the stopper is dropped between ticks and
				// Stop comes before tick 0's expiry: nothing ran. Taken in
				// first, it waits staged for the tick, whose pass claims the
				// six due before the hook runs.
				if len(res) == 12 {
					ran = 0
				}
			}
			total.waitFor(t, ran, "timeouts claimed with the stopping task")
			wantReturned := 12 - ran
			require.Len(t, res, int(wantReturned), "timeouts returned by Stop from the task")
			for _, to := range res {
				require.True(t, to.IsCancelled() && !to.IsExpired(), "%v returned by Stop but not cancelled", to)
			}
			for i, task := range sameTick {
				require.Equal(t, ran/int64(len(sameTick)), task.runs.Load(), "runs of same-tick task %d", i)
			}
			faultBalance(t, h, 13, ran+stopperRan, cancelled, wantReturned)
		})
	}
}

// TestFaultTaskReschedulesItself: a task that re-schedules itself from Run
// with a zero or negative delay runs once per tick, never twice in one (no
// loop within a tick), even at a pending limit of 1; with a pool and the
// real clock it hammers the timer until Stop, and the counts add up.
func TestFaultTaskReschedulesItself(t *testing.T) {
	for _, delay := range []time.Duration{0, -time.Hour, testTick / 2} {
		t.Run(fmt.Sprintf("inline/delay=%v", delay), func(t *testing.T) {
			h, fake := newFakeTimer(t, WithMaxPendingTimeouts(1))
			r := &reschedulingTask{h: h, delay: delay, now: fake.Nanotime}
			mustSchedule(t, h, r, delay)
			fake.WaitAsleep()
			const ticks = 50
			advance(fake, ticks*testTick)
			require.Equal(t, int64(ticks), r.runs.Load(), "runs in %d ticks, want one per tick", ticks)
			require.Zero(t, r.errs.Load(), "failed re-schedules")
			for i, at := range r.runAt {
				require.Equal(t, int64(i+1)*int64(testTick), at, "run %d at %v, want at the end of tick %d", i, time.Duration(at), i)
			}
			require.Equal(t, int64(1), h.PendingTimeouts())
			require.Equal(t, []Timeout{*r.last.Load()}, h.Stop(), "Stop returns the last re-schedule")
			faultBalance(t, h, 1+r.accepted.Load(), r.runs.Load(), 0, 1)
		})
	}
	t.Run("pool/real-clock", func(t *testing.T) {
		h, err := New(WithTickDuration(time.Millisecond), WithLogger(discardLogger()))
		require.NoError(t, err)
		const chains = 8
		ended := newFaultCounter()
		rs := make([]*reschedulingTask, chains)
		for i := range rs {
			rs[i] = &reschedulingTask{h: h, refused: ended.add}
			mustSchedule(t, h, rs[i], 0)
		}
		// Real time is the subject: the chains run for 100ms.
		time.Sleep(100 * time.Millisecond)
		res := h.Stop()
		// Each chain ends in exactly one of: its last timeout returned by
		// Stop, or a re-schedule refused with ErrStopped, perhaps by a task
		// still running on the pool.
		ended.waitFor(t, chains-int64(len(res)), "chains ended by ErrStopped")
		var runs, accepted, failed int64
		for _, r := range rs {
			runs += r.runs.Load()
			accepted += r.accepted.Load()
			failed += r.errs.Load()
		}
		require.Equal(t, int64(chains), failed+int64(len(res)),
			"%d chains ended by ErrStopped, %d returned by Stop; want %d in all", failed, len(res), chains)
		require.GreaterOrEqual(t, runs, int64(chains*5), "runs in 100ms with a 1ms tick")
		faultBalance(t, h, chains+accepted, runs, 0, int64(len(res)))
		require.Equal(t, uint64(failed), h.Stats().RejectedStopped)
		t.Logf("%d chains: %d runs in 100ms", chains, runs)
	})
}

// TestFaultStopRacesNewTimeoutAndCancel: producers on every core schedule
// and cancel at full speed while two goroutines call Stop. Afterwards,
// every accepted timeout ran exactly once, was cancelled by a successful
// Cancel, or is in Stop's result (exactly one of them); a NewTimeout that
// failed with ErrStopped never runs; one Stop got the result, the other
// nil; and Stats matches the test's own counts. Repeated on fresh timers,
// inline and on a pool, and with Stop racing the timer's lazy start.
func TestFaultStopRacesNewTimeoutAndCancel(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for round := 0; round < rounds; round++ {
		inline := round%2 == 0
		// Every other pair of rounds, Stop races the lazy start itself.
		warmup := 200
		if round%4 >= 2 {
			warmup = 0
		}
		t.Run(fmt.Sprintf("round%d/inline=%v/warmup=%d", round, inline, warmup), func(t *testing.T) {
			faultStopRace(t, inline, warmup, uint64(round))
		})
	}
}

type faultRaceEntry struct {
	to        Timeout
	task      *faultCountingTask
	cancelled bool
}

func faultStopRace(t *testing.T, inline bool, warmup int, seed uint64) {
	opts := []Option{WithTickDuration(time.Millisecond), WithLogger(discardLogger())}
	if inline {
		opts = append(opts, WithExecutor(pool.Inline))
	}
	h, err := New(opts...)
	require.NoError(t, err)
	total := newFaultCounter()
	producers := max(runtime.GOMAXPROCS(0), 2) * 2
	var ready, done sync.WaitGroup
	accepted := make([][]*faultRaceEntry, producers)
	refused := make([][]*faultCountingTask, producers)
	for p := 0; p < producers; p++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(p)))
			for i := 0; ; i++ {
				if i == warmup {
					ready.Done() // enough load built up: Stop may begin
				}
				task := &faultCountingTask{total: total}
				to, err := h.NewTimeout(task, time.Duration(rng.Int64N(int64(4*time.Millisecond)))-time.Millisecond)
				if err != nil {
					assert.ErrorIs(t, err, ErrStopped, "NewTimeout") // a producer's goroutine: no require
					refused[p] = append(refused[p], task)
					if i < warmup {
						ready.Done()
					}
					return
				}
				e := &faultRaceEntry{to: to, task: task}
				accepted[p] = append(accepted[p], e)
				if rng.IntN(3) == 0 {
					// Cancel a recent one, perhaps already run.
					n := len(accepted[p])
					victim := accepted[p][n-1-rng.IntN(min(n, 8))]
					if victim.to.Cancel() {
						assert.False(t, victim.cancelled, "Cancel succeeded twice on one timeout")
						victim.cancelled = true
					}
				}
			}
		}()
	}
	ready.Wait()
	var results [2][]Timeout
	startStops, waitStops := concurrently(len(results), func(i int) { results[i] = h.Stop() })
	startStops()
	waitStops()
	done.Wait()

	require.False(t, results[0] != nil && results[1] != nil, "both Stops returned timeouts")
	res := append(results[0], results[1]...)
	inResult := make(map[Timeout]bool, len(res))
	for _, to := range res {
		require.False(t, inResult[to], "Stop returned %v twice", to)
		inResult[to] = true
	}
	// Every claimed timeout runs, on the pool perhaps after Stop returned.
	expired := int64(h.Stats().Expired)
	total.waitFor(t, expired, "expired tasks run")
	var nAccepted, nCancelled, nRan, nRefused int64
	for p := range accepted {
		for _, e := range accepted[p] {
			nAccepted++
			ran := e.task.runs.Load()
			outcomes := ran
			if e.cancelled {
				outcomes++
				nCancelled++
			}
			if inResult[e.to] {
				outcomes++
				delete(inResult, e.to)
			}
			nRan += ran
			require.True(t, outcomes == 1 && ran <= 1, "timeout %v: ran %d times, cancelled %v, returned by Stop %v",
				e.to, ran, e.cancelled, outcomes-ran-boolInt(e.cancelled) == 1)
			require.True(t, e.to.IsExpired() == (ran == 1) && e.to.IsCancelled() != (ran == 1),
				"timeout %v: ran %d, IsExpired %v, IsCancelled %v", e.to, ran, e.to.IsExpired(), e.to.IsCancelled())
		}
		for _, task := range refused[p] {
			nRefused++
			require.Zero(t, task.runs.Load(), "a NewTimeout refused with ErrStopped ran its task")
		}
	}
	require.Empty(t, inResult, "Stop returned timeouts nobody scheduled")
	faultBalance(t, h, nAccepted, nRan, nCancelled, int64(len(res)))
	require.Equal(t, uint64(nRefused), h.Stats().RejectedStopped, "RejectedStopped, against the test's count")
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestFaultStopFromAHookRunsWhatWasClaimed: a worker that wakes several
// ticks late claims the first due tick's timeouts and keeps them while it
// catches up; a Cancelled hook that calls Stop in that pass still has them
// run, once, and Stop returns the rest.
func TestFaultStopFromAHookRunsWhatWasClaimed(t *testing.T) {
	h, fake := newFakeTimer(t)
	total := newFaultCounter()
	result := make(chan []Timeout, 1)
	stopper := mustSchedule(t, h, &hookTask{onCancel: func(Timeout) { result <- h.Stop() }}, time.Hour)
	first := &faultCountingTask{total: total}
	mustSchedule(t, h, first, testTick/2)
	second := mustSchedule(t, h, &faultCountingTask{total: total}, testTick+testTick/2)
	later := mustSchedule(t, h, &faultCountingTask{total: total}, 3*testTick+testTick/2)
	advance(fake, testTick/2) // all in the wheel
	require.True(t, stopper.Cancel())
	fake.WaitAsleep()
	fake.Jump(2 * testTick) // tick 0 and tick 1 ended: the worker catches up
	var stopped []Timeout
	select {
	case stopped = <-result:
	case <-time.After(faultWaitTimeout):
		require.Fail(t, "Stop from the hook did not return")
	}
	assert.ElementsMatch(t, []Timeout{second, later}, stopped)
	assert.Equal(t, int64(1), first.runs.Load(), "the timeout claimed before Stop ran")
	faultBalance(t, h, 4, 1, 1, 2)
}
