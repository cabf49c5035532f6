package hashedwheel

import (
	"context"
	"errors"
	"fmt"
	"github.com/stretchr/testify/require"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clock"
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
	if c.n < n {
		tb.Fatalf("%s: %d of %d after %v", what, c.n, n, faultWaitTimeout)
	}
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
		tb.Fatalf("%s blocked for %v", what, faultWaitTimeout)
	}
}

// faultLogger returns a logger writing to a buffer the test can read.
func faultLogger() (*fuzzLog, *slog.Logger) {
	l := &fuzzLog{}
	return l, slog.New(slog.NewTextHandler(l, nil))
}

// faultNewTimer returns a started timer on a fake clock with a 10ms tick,
// stopped when the test ends.
func faultNewTimer(tb testing.TB, logger *slog.Logger, opts ...Option) (*HashedWheelTimer, *clock.Fake) {
	tb.Helper()
	fake := clock.NewFake(0)
	h := startTimer(tb, append([]Option{WithTickDuration(testTick), WithLogger(logger), withClock(fake)}, opts...)...)
	fake.Settle()
	return h, fake
}

// faultBalance checks the counters of a stopped timer against what the
// test counted itself.
func faultBalance(tb testing.TB, h *HashedWheelTimer, scheduled, ran, cancelled, returned int64) {
	tb.Helper()
	s := h.Stats()
	if s.Pending != 0 || s.Scheduled != uint64(scheduled) || s.Expired != uint64(ran) ||
		s.Cancelled != uint64(cancelled) || s.ReturnedByStop != uint64(returned) {
		tb.Fatalf("Stats %+v; the test counted scheduled %d, ran %d, cancelled %d, returned by Stop %d",
			s, scheduled, ran, cancelled, returned)
	}
	if scheduled != ran+cancelled+returned {
		tb.Fatalf("scheduled %d != ran %d + cancelled %d + returned %d", scheduled, ran, cancelled, returned)
	}
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
// (i%spread+1) ticks, and returns them with their timeouts.
func faultSchedule(tb testing.TB, h *HashedWheelTimer, total *faultCounter, n, spread int) ([]*faultCountingTask, []Timeout) {
	tb.Helper()
	tasks := make([]*faultCountingTask, n)
	tos := make([]Timeout, n)
	for i := range tasks {
		tasks[i] = &faultCountingTask{total: total}
		to, err := h.NewTimeout(tasks[i], time.Duration(i%spread+1)*testTick-time.Millisecond)
		if err != nil {
			tb.Fatal(err)
		}
		tos[i] = to
	}
	return tasks, tos
}

// faultExecutor is an executor whose behaviour the test chooses.
type faultExecutor struct {
	calls   atomic.Int64
	execute func(task func()) error
}

func (e *faultExecutor) Execute(task func()) error {
	e.calls.Add(1)
	return e.execute(task)
}

// TestFaultExecutorRejectsOrPanics: an executor that refuses every task, or
// panics without running it. Every expired task still runs, exactly once,
// on a goroutine of its own; the failures are counted and logged; the
// worker keeps ticking.
func TestFaultExecutorRejectsOrPanics(t *testing.T) {
	for _, mode := range []string{"rejects", "panics"} {
		t.Run(mode, func(t *testing.T) {
			exec := &faultExecutor{execute: func(func()) error {
				if mode == "panics" {
					panic("executor exploded")
				}
				return errors.New("executor full")
			}}
			logs, logger := faultLogger()
			h, fake := faultNewTimer(t, logger, WithExecutor(exec))
			total := newFaultCounter()
			tasks, tos := faultSchedule(t, h, total, 40, 4)
			fake.Settle()
			advance(fake, 4*testTick)
			total.waitFor(t, int64(len(tasks)), "tasks run despite the executor")
			// The worker still ticks: a later timeout fires too.
			late := &faultCountingTask{total: total}
			if _, err := h.NewTimeout(late, testTick); err != nil {
				t.Fatal(err)
			}
			fake.Settle()
			advance(fake, 2*testTick)
			total.waitFor(t, int64(len(tasks))+1, "a timeout scheduled after the failures")
			for i, task := range tasks {
				if n := task.runs.Load(); n != 1 || !tos[i].IsExpired() {
					t.Fatalf("task %d ran %d times (expired %v)", i, n, tos[i].IsExpired())
				}
			}
			s := h.Stats()
			if s.ExecutorFailures == 0 || s.ExecutorFailures != uint64(exec.calls.Load()) {
				t.Fatalf("ExecutorFailures %d, executor called %d times", s.ExecutorFailures, exec.calls.Load())
			}
			if !strings.Contains(logs.String(), "executor refused") {
				t.Fatalf("no warning logged: %q", logs.String())
			}
			if res := h.Stop(); len(res) != 0 {
				t.Fatalf("Stop returned %d timeouts, want none", len(res))
			}
			faultBalance(t, h, int64(len(tasks))+1, total.load(), 0, 0)
		})
	}
}

// TestFaultExecutorPanicsAfterRunningTheTask: an executor that runs the
// task and then panics (it broke after doing its job). The timer cannot
// know whether the task ran; it must still not run it twice.
func TestFaultExecutorPanicsAfterRunningTheTask(t *testing.T) {
	exec := &faultExecutor{execute: func(task func()) error {
		task()
		panic("executor broke after running the task")
	}}
	_, logger := faultLogger()
	h, fake := faultNewTimer(t, logger, WithExecutor(exec))
	total := newFaultCounter()
	tasks, _ := faultSchedule(t, h, total, 8, 2)
	fake.Settle()
	advance(fake, 2*testTick)
	total.waitFor(t, int64(len(tasks)), "tasks run")
	h.Stop()
	// Any duplicate run happens on a goroutine of the timer's: give it the
	// chance to show up before counting. (Time is the subject here: a
	// duplicate has no event to wait for.)
	time.Sleep(50 * time.Millisecond)
	for i, task := range tasks {
		if n := task.runs.Load(); n != 1 {
			t.Errorf("task %d ran %d times, want exactly once", i, n)
		}
	}
}

// TestFaultExecutorRunsEachTaskTwice: an executor that runs every task it
// is given twice, on two goroutines at once, either of which may run late,
// after the worker has reused what the task ran for later timeouts. Every
// timer task still runs exactly once.
func TestFaultExecutorRunsEachTaskTwice(t *testing.T) {
	var running sync.WaitGroup
	exec := &faultExecutor{execute: func(task func()) error {
		running.Add(2)
		for range 2 {
			go func() {
				defer running.Done()
				task()
			}()
		}
		return nil
	}}
	_, logger := faultLogger()
	h, fake := faultNewTimer(t, logger, WithExecutor(exec))
	total := newFaultCounter()
	tasks, _ := faultSchedule(t, h, total, 256, 8)
	fake.Settle()
	for range 8 {
		advance(fake, testTick)
		fake.Settle()
	}
	total.waitFor(t, int64(len(tasks)), "tasks run")
	h.Stop()
	running.Wait()
	for i, task := range tasks {
		if n := task.runs.Load(); n != 1 {
			t.Errorf("task %d ran %d times, want exactly once", i, n)
		}
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
			exec := &faultExecutor{execute: func(task func()) error {
				if blocked.CompareAndSwap(false, true) {
					entered <- struct{}{}
					<-release
				}
				task() // inline once released
				return nil
			}}
			_, logger := faultLogger()
			h, fake := faultNewTimer(t, logger, WithExecutor(exec))
			total := newFaultCounter()
			first := &faultCountingTask{total: total}
			mustFault(t, h, first, testTick/2)
			later := &faultCountingTask{total: total}
			laterTo := mustFault(t, h, later, 5*testTick)
			fake.Settle()

			fake.Advance(testTick) // the worker claims first and blocks in Execute
			<-entered
			var extra Timeout
			var extraTask = &faultCountingTask{total: total}
			faultWithin(t, "producers while the executor blocks", func() {
				var err error
				if extra, err = h.NewTimeout(extraTask, 2*testTick); err != nil {
					t.Error(err)
				}
				if !laterTo.Cancel() {
					t.Error("Cancel failed while the worker was blocked")
				}
				_ = h.PendingTimeouts()
				_ = h.Stats()
			})
			if t.Failed() {
				close(release)
				return
			}
			if !stopWhileBlocked {
				close(release)
				fake.Settle()
				advance(fake, 3*testTick)
				total.waitFor(t, 2, "first and extra")
				if res := h.Stop(); len(res) != 0 {
					t.Fatalf("Stop returned %v", res)
				}
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
				t.Fatal("Stop did not return once the executor let go")
			}
			total.waitFor(t, 1, "first")
			if len(res) != 1 || res[0] != extra || !extra.IsCancelled() || extraTask.runs.Load() != 0 {
				t.Fatalf("Stop returned %v, want the extra timeout, cancelled and never run", res)
			}
			faultBalance(t, h, 3, 1, 1, 1)
		})
	}
}

func mustFault(tb testing.TB, h *HashedWheelTimer, task TimerTask, delay time.Duration) Timeout {
	tb.Helper()
	to, err := h.NewTimeout(task, delay)
	if err != nil {
		tb.Fatal(err)
	}
	return to
}

// faultPanicTask panics when it runs, and in its Cancelled hook.
type faultPanicTask struct {
	ran, hooked atomic.Int64
	total       *faultCounter
}

func (p *faultPanicTask) Run(Timeout) {
	p.ran.Add(1)
	if p.total != nil {
		p.total.add()
	}
	panic("task exploded")
}

func (p *faultPanicTask) Cancelled(Timeout) {
	p.hooked.Add(1)
	panic("hook exploded")
}

// TestFaultTaskPanics: tasks and Cancelled hooks that panic, run inline on
// the worker or on the timer's pool. Each panic is recovered and logged;
// the worker keeps ticking; the counts add up.
func TestFaultTaskPanics(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			logs, logger := faultLogger()
			var opts []Option
			if inline {
				opts = append(opts, WithExecutor(pool.Inline))
			}
			h, fake := faultNewTimer(t, logger, opts...)
			total := newFaultCounter()
			panicky := make([]*faultPanicTask, 5)
			for i := range panicky {
				panicky[i] = &faultPanicTask{total: total}
				mustFault(t, h, panicky[i], testTick/2)
			}
			hooked := &faultPanicTask{}
			hookedTo := mustFault(t, h, hooked, 10*testTick)
			fake.Settle()
			advance(fake, testTick)
			hookedTo.Cancel()
			advance(fake, testTick)
			// The worker survived: timeouts after the panics fire.
			tasks, _ := faultSchedule(t, h, total, 10, 3)
			fake.Settle()
			advance(fake, 3*testTick)
			total.waitFor(t, int64(len(panicky)+len(tasks)), "panicking tasks and tasks after them")
			for i, p := range panicky {
				if p.ran.Load() != 1 {
					t.Fatalf("panicking task %d ran %d times", i, p.ran.Load())
				}
			}
			if hooked.hooked.Load() != 1 || hooked.ran.Load() != 0 {
				t.Fatalf("hook called %d times, task ran %d times", hooked.hooked.Load(), hooked.ran.Load())
			}
			h.Stop()
			faultBalance(t, h, int64(len(panicky)+1+len(tasks)), int64(len(panicky)+len(tasks)), 1, 0)
			if inline {
				// On the pool the panic is logged by the pool's wrapper or
				// ours; inline it must be ours.
				if n := strings.Count(logs.String(), "TimerTask panicked"); n != len(panicky) {
					t.Fatalf("%d task panics logged, want %d: %s", n, len(panicky), logs.String())
				}
			}
			if !strings.Contains(logs.String(), "Cancelled hook panicked") {
				t.Fatalf("hook panic not logged: %s", logs.String())
			}
		})
	}
}

// isClosed reports whether c is closed, without waiting.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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
// StopContext returns at its context's end with the timeouts; Stop waits
// for the task and returns only once it has. Inline it holds the worker,
// but producers never wait for it, and a Stop waits for it and then
// returns everything that did not run.
func TestFaultTaskBlocksForever(t *testing.T) {
	t.Run("pool", func(t *testing.T) {
		_, logger := faultLogger()
		h, fake := faultNewTimer(t, logger)
		blocker := newFaultBlockingTask()
		var releaseOnce sync.Once
		release := func() { releaseOnce.Do(func() { close(blocker.release) }) }
		t.Cleanup(release) // before the timer's Stop, should the test fail
		mustFault(t, h, blocker, 0)
		fake.Settle()
		advance(fake, testTick)
		<-blocker.started
		total := newFaultCounter()
		tasks, _ := faultSchedule(t, h, total, 20, 5)
		fake.Settle()
		advance(fake, 5*testTick)
		total.waitFor(t, int64(len(tasks)), "tasks while another blocks")
		pending := mustFault(t, h, &faultCountingTask{total: total}, time.Hour)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var res []Timeout
		var err error
		faultWithin(t, "StopContext with a task blocked on the pool", func() { res, err = h.StopContext(ctx) })
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, []Timeout{pending}, res, "the same timeouts as Stop")

		stopped := make(chan bool)
		go func() {
			h.Stop()
			stopped <- isClosed(blocker.done)
		}()
		<-h.done // the worker has exited: Stop waits for the task
		select {
		case <-stopped:
			t.Fatal("Stop returned while a task was running")
		default:
		}
		release()
		require.True(t, <-stopped, "Stop returned before the task did")
		faultBalance(t, h, int64(len(tasks))+2, int64(len(tasks))+1, 0, 1)
	})
	t.Run("inline", func(t *testing.T) {
		_, logger := faultLogger()
		h, fake := faultNewTimer(t, logger, WithExecutor(pool.Inline))
		blocker := newFaultBlockingTask()
		mustFault(t, h, blocker, 0)
		fake.Settle()
		fake.Advance(testTick)
		<-blocker.started // the worker is stuck in the task
		total := newFaultCounter()
		var tos []Timeout
		faultWithin(t, "NewTimeout and Cancel with the worker stuck", func() {
			_, tos = faultSchedule(t, h, total, 20, 5)
			for _, to := range tos[:5] {
				if !to.Cancel() {
					t.Error("Cancel failed")
				}
			}
		})
		stopped := make(chan []Timeout)
		go func() { stopped <- h.Stop() }()
		close(blocker.release)
		var res []Timeout
		select {
		case res = <-stopped:
		case <-time.After(faultWaitTimeout):
			t.Fatal("Stop did not return once the task did")
		}
		<-blocker.done
		if len(res) != 15 {
			t.Fatalf("Stop returned %d timeouts, want the 15 not cancelled", len(res))
		}
		if total.load() != 0 {
			t.Fatalf("%d tasks ran", total.load())
		}
		faultBalance(t, h, 21, 1, 5, 15)
	})
}

// faultStoppingTask calls Stop on its timer and hands over the result.
type faultStoppingTask struct {
	h      *HashedWheelTimer
	result chan []Timeout
}

func (s *faultStoppingTask) Run(Timeout) { s.result <- s.h.Stop() }

func (s *faultStoppingTask) Cancelled(Timeout) { s.result <- s.h.Stop() }

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
			_, logger := faultLogger()
			var opts []Option
			if c.inline {
				opts = append(opts, WithExecutor(pool.Inline))
			}
			h, fake := faultNewTimer(t, logger, opts...)
			total := newFaultCounter()
			stopper := &faultStoppingTask{h: h, result: make(chan []Timeout, 1)}
			// Six due in tick 0 with the stopper, six in later ticks.
			sameTick, _ := faultSchedule(t, h, total, 6, 1)
			stopperTo := mustFault(t, h, stopper, testTick/2)
			for i := 0; i < 6; i++ {
				mustFault(t, h, &faultCountingTask{total: total}, time.Duration(i+2)*testTick)
			}
			if c.hook {
				stopperTo.Cancel() // its hook runs in tick 0's cancellation pass
			}
			fake.Settle()
			fake.Advance(testTick)
			var res []Timeout
			select {
			case res = <-stopper.result:
			case <-time.After(faultWaitTimeout):
				t.Fatal("Stop from a task did not return: deadlock")
			}
			fake.Settle() // returns once the worker has exited
			var again []Timeout
			faultWithin(t, "a second Stop", func() { again = h.Stop() })
			if again != nil {
				t.Fatalf("second Stop returned %v", again)
			}
			if _, err := h.NewTimeout(&faultCountingTask{total: total}, 0); !errors.Is(err, ErrStopped) {
				t.Fatalf("NewTimeout after Stop: %v", err)
			}
			ran, stopperRan, cancelled := int64(len(sameTick)), int64(1), int64(0)
			if c.hook { // Stop came before tick 0's expiry: nothing ran
				ran, stopperRan, cancelled = 0, 0, 1
			}
			total.waitFor(t, ran, "timeouts claimed with the stopping task")
			wantReturned := 12 - ran
			if int64(len(res)) != wantReturned {
				t.Fatalf("Stop from the task returned %d timeouts, want %d", len(res), wantReturned)
			}
			for _, to := range res {
				if !to.IsCancelled() || to.IsExpired() {
					t.Fatalf("%v returned by Stop but not cancelled", to)
				}
			}
			for i, task := range sameTick {
				if task.runs.Load() != ran/int64(len(sameTick)) {
					t.Fatalf("same-tick task %d ran %d times", i, task.runs.Load())
				}
			}
			faultBalance(t, h, 13, ran+stopperRan, cancelled, wantReturned)
		})
	}
}

// faultReschedulingTask re-schedules itself with delay from its own Run,
// until stop is set.
type faultReschedulingTask struct {
	h        *HashedWheelTimer
	delay    time.Duration
	runs     atomic.Int64
	accepted atomic.Int64 // successful re-schedules
	last     atomic.Pointer[Timeout]
	errs     atomic.Int64  // failed re-schedules (ErrStopped)
	ended    *faultCounter // counts failed re-schedules, if set
	fake     *clock.Fake
	runAt    []int64 // with the fake clock; written by the worker only
}

func (r *faultReschedulingTask) Run(Timeout) {
	r.runs.Add(1)
	if r.fake != nil {
		r.runAt = append(r.runAt, r.fake.Now())
	}
	to, err := r.h.NewTimeout(r, r.delay)
	if err != nil {
		r.errs.Add(1)
		if r.ended != nil {
			r.ended.add()
		}
		return
	}
	r.accepted.Add(1)
	r.last.Store(&to)
}

// TestFaultTaskReschedulesItself: a task that re-schedules itself from Run
// with a zero or negative delay runs once per tick, never twice in one (no
// loop within a tick), even at a pending limit of 1; with a pool and the
// real clock it hammers the timer until Stop, and the counts add up.
func TestFaultTaskReschedulesItself(t *testing.T) {
	for _, delay := range []time.Duration{0, -time.Hour, testTick / 2} {
		t.Run(fmt.Sprintf("inline/delay=%v", delay), func(t *testing.T) {
			_, logger := faultLogger()
			h, fake := faultNewTimer(t, logger, WithExecutor(pool.Inline), WithMaxPendingTimeouts(1))
			r := &faultReschedulingTask{h: h, delay: delay, fake: fake}
			mustFault(t, h, r, delay)
			fake.Settle()
			const ticks = 50
			advance(fake, ticks*testTick)
			if n := r.runs.Load(); n != ticks || r.errs.Load() != 0 {
				t.Fatalf("%d runs (%d failed re-schedules) in %d ticks, want one per tick", n, r.errs.Load(), ticks)
			}
			for i, at := range r.runAt {
				if at != int64(i+1)*int64(testTick) {
					t.Fatalf("run %d at %v, want at the end of tick %d", i, time.Duration(at), i)
				}
			}
			if p := h.PendingTimeouts(); p != 1 {
				t.Fatalf("pending %d, want 1", p)
			}
			res := h.Stop()
			if len(res) != 1 || res[0] != *r.last.Load() {
				t.Fatalf("Stop returned %v, want the last re-schedule", res)
			}
			faultBalance(t, h, 1+r.accepted.Load(), r.runs.Load(), 0, 1)
		})
	}
	t.Run("pool/real-clock", func(t *testing.T) {
		_, logger := faultLogger()
		h, err := New(WithTickDuration(time.Millisecond), WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		const chains = 8
		ended := newFaultCounter()
		rs := make([]*faultReschedulingTask, chains)
		for i := range rs {
			rs[i] = &faultReschedulingTask{h: h, ended: ended}
			mustFault(t, h, rs[i], 0)
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
		if failed+int64(len(res)) != chains {
			t.Fatalf("%d chains ended by ErrStopped, %d returned by Stop; want %d in all", failed, len(res), chains)
		}
		if runs < chains*5 {
			t.Fatalf("only %d runs in 100ms with a 1ms tick", runs)
		}
		faultBalance(t, h, chains+accepted, runs, 0, int64(len(res)))
		if s := h.Stats(); s.RejectedStopped != uint64(failed) {
			t.Fatalf("RejectedStopped %d, want %d", s.RejectedStopped, failed)
		}
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
	_, logger := faultLogger()
	opts := []Option{WithTickDuration(time.Millisecond), WithLogger(logger)}
	if inline {
		opts = append(opts, WithExecutor(pool.Inline))
	}
	h, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	total := newFaultCounter()
	producers := max(runtime.GOMAXPROCS(0), 2) * 2
	var ready, done sync.WaitGroup
	startStop := make(chan struct{})
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
					if !errors.Is(err, ErrStopped) {
						t.Errorf("NewTimeout: %v", err)
					}
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
						if victim.cancelled {
							t.Errorf("Cancel succeeded twice on one timeout")
						}
						victim.cancelled = true
					}
				}
			}
		}()
	}
	ready.Wait()
	var results [2][]Timeout
	var stoppers sync.WaitGroup
	for i := range results {
		stoppers.Add(1)
		go func() {
			defer stoppers.Done()
			<-startStop
			results[i] = h.Stop()
		}()
	}
	close(startStop)
	stoppers.Wait()
	done.Wait()

	if results[0] != nil && results[1] != nil {
		t.Fatalf("both Stops returned timeouts")
	}
	res := append(results[0], results[1]...)
	inResult := make(map[Timeout]bool, len(res))
	for _, to := range res {
		if inResult[to] {
			t.Fatalf("Stop returned %v twice", to)
		}
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
			if outcomes != 1 || ran > 1 {
				t.Fatalf("timeout %v: ran %d times, cancelled %v, returned by Stop %v", e.to, ran, e.cancelled, outcomes-ran-boolInt(e.cancelled) == 1)
			}
			if e.to.IsExpired() != (ran == 1) || e.to.IsCancelled() == (ran == 1) {
				t.Fatalf("timeout %v: ran %d, IsExpired %v, IsCancelled %v", e.to, ran, e.to.IsExpired(), e.to.IsCancelled())
			}
		}
		for _, task := range refused[p] {
			nRefused++
			if task.runs.Load() != 0 {
				t.Fatalf("a NewTimeout refused with ErrStopped ran its task")
			}
		}
	}
	if len(inResult) != 0 {
		t.Fatalf("Stop returned %d timeouts nobody scheduled", len(inResult))
	}
	faultBalance(t, h, nAccepted, nRan, nCancelled, int64(len(res)))
	if s := h.Stats(); s.RejectedStopped != uint64(nRefused) {
		t.Fatalf("RejectedStopped %d, the test counted %d", s.RejectedStopped, nRefused)
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
