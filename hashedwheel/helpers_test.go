package hashedwheel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
	"github.com/wheeltimer/wheeltimer/internal/racetest"
	"github.com/wheeltimer/wheeltimer/pool"
)

// The helpers shared by the tests and benchmarks of the package.

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// testTick is the tick of timers driven by a fake clock.
const testTick = 10 * time.Millisecond

// startTimer returns a timer made with opts and started; it is stopped
// when the test ends.
func startTimer(tb testing.TB, opts ...Option) *HashedWheelTimer {
	tb.Helper()
	h, err := New(opts...)
	require.NoError(tb, err)
	require.NoError(tb, h.Start())
	tb.Cleanup(func() { h.Stop() })
	return h
}

// newTimerOn returns a started timer on the clock c, with a tick of
// testTick, the timer's own executor and a logger that discards; opts
// override those. The timer is stopped when the test ends.
func newTimerOn(tb testing.TB, c clock.Clock, opts ...Option) *HashedWheelTimer {
	tb.Helper()
	return startTimer(tb, append([]Option{
		WithTickDuration(testTick),
		WithLogger(discardLogger()),
		WithClock(c),
	}, opts...)...)
}

// newFakeTimer is newTimerOn a fresh fake clock reading 0, with tasks run
// inline on the worker, so that after fake.Settle every due task has run;
// opts override those. It returns once the worker is asleep.
func newFakeTimer(tb testing.TB, opts ...Option) (*HashedWheelTimer, *clock.Fake) {
	tb.Helper()
	fake := clock.NewFake(time.Now())
	h := newTimerOn(tb, fake, append([]Option{WithExecutor(pool.Inline)}, opts...)...)
	fake.WaitAsleep()
	return h, fake
}

// settleWithin waits for the worker to fall asleep, as fake.Settle does,
// but fails the test instead of hanging if it has not within bound: a
// worker that busy-loops without sleeping is a bug, not a reason to hang
// the suite.
func settleWithin(tb testing.TB, fake *clock.Fake, h *HashedWheelTimer, bound time.Duration) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		fake.WaitAsleep()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(bound):
	}
	msg := fmt.Sprintf("the worker did not fall asleep within %v: it busy-loops (fake clock %d, stats %+v)",
		bound, fake.Nanotime(), h.Stats())
	// Stop ends the worker's loop, which releases the sleeper and Settle.
	h.Stop()
	<-done
	require.Fail(tb, msg)
}

// advance waits for the worker to take in what was just scheduled, then
// moves the fake clock forward by d, one tick at a time so that each tick
// is processed at its own instant, waiting for the worker after each.
func advance(fake *clock.Fake, d time.Duration) {
	fake.WaitAsleep()
	for d > 0 {
		step := min(d, testTick)
		fake.Jump(step)
		fake.WaitAsleep()
		d -= step
	}
}

// mustSchedule schedules task after delay on h, failing the test if
// NewTimeout fails. Call it on the test's goroutine only: a task that
// schedules checks the error itself.
func mustSchedule(tb testing.TB, h *HashedWheelTimer, task TimerTask, delay time.Duration) Timeout {
	tb.Helper()
	to, err := h.NewTimeout(task, delay)
	require.NoError(tb, err)
	return to
}

// sleepingUntil returns the instant of h's clock its worker sleeps until,
// clockwork.Forever if only a wake-up ends its sleep. Call it while the
// worker sleeps (after the fake's WaitAsleep).
func sleepingUntil(h *HashedWheelTimer) int64 {
	return h.startNanos + min(h.worker.plannedWake, clockwork.Forever-h.startNanos)
}

// startTime returns the wall time of the timer's start on its clock, as
// the clock reads now: a timeout's Deadline is it plus the deadline, while
// the wall clock does not step.
func startTime(h *HashedWheelTimer) time.Time { return h.clock.Now().Add(-time.Duration(h.now())) }

// isClosed reports whether c is closed, without waiting.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// heapInUse returns the live heap after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Tasks.

// noopTask does nothing.
var noopTask = TaskFunc(func(Timeout) {})

// hookTask is a task with a Cancelled hook. It counts its runs and its
// Cancelled calls, then calls onRun or onCancel, if set: a task that must
// not run is checked by its run count.
type hookTask struct {
	runs, cancelled atomic.Int32
	onRun           func(Timeout)
	onCancel        func(Timeout)
}

func (h *hookTask) Run(to Timeout) {
	h.runs.Add(1)
	if h.onRun != nil {
		h.onRun(to)
	}
}

func (h *hookTask) Cancelled(to Timeout) {
	h.cancelled.Add(1)
	if h.onCancel != nil {
		h.onCancel(to)
	}
}

// runRecorder records the clock reading, from now, at each of its runs.
type runRecorder struct {
	now func() int64
	mu  sync.Mutex
	at  []int64
}

func (r *runRecorder) Run(Timeout) {
	r.mu.Lock()
	r.at = append(r.at, r.now())
	r.mu.Unlock()
}

// runs returns the readings so far.
func (r *runRecorder) runs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.at...)
}

// startLateness runs schedule, whose tasks call run with their deadline,
// waits for the n tasks, each of which works for work, and returns how
// late each started, sorted.
func startLateness(n int, work time.Duration, schedule func(run func(due time.Time))) []time.Duration {
	var mu sync.Mutex
	late := make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	wg.Add(n)
	schedule(func(due time.Time) {
		l := time.Since(due)
		mu.Lock()
		late = append(late, l)
		mu.Unlock()
		time.Sleep(work) // the work, not a synchronisation
		wg.Done()
	})
	wg.Wait()
	slices.Sort(late)
	return late
}

// reschedulingTask re-schedules itself after delay from each of its runs.
// It counts its runs and the re-schedules accepted and refused, keeps the
// last timeout it made, and calls refused, if set, on a refusal. With now
// set it records the clock at each run in runAt, which only an inline
// worker may write.
type reschedulingTask struct {
	h       *HashedWheelTimer
	delay   time.Duration
	now     func() int64
	refused func()

	runs, accepted, errs atomic.Int64
	last                 atomic.Pointer[Timeout]
	runAt                []int64
}

func (r *reschedulingTask) Run(Timeout) {
	r.runs.Add(1)
	if r.now != nil {
		r.runAt = append(r.runAt, r.now())
	}
	to, err := r.h.NewTimeout(r, r.delay)
	if err != nil {
		r.errs.Add(1)
		if r.refused != nil {
			r.refused()
		}
		return
	}
	r.accepted.Add(1)
	r.last.Store(&to)
}

// The slow tasks due together of TestTasksDueTogetherStartTogether and
// BenchmarkSlowTasksDueTogether: slowTasks timeouts due after slowDelay,
// on a tick of slowTick, whose tasks each work for slowWork.
const (
	slowTasks = 1000
	slowWork  = 10 * time.Millisecond
	slowDelay = 50 * time.Millisecond
	slowTick  = 5 * time.Millisecond
)

// startHeldTask schedules on h a task due at once that runs until release
// is closed, and waits until it has started; finished is closed once the
// task has returned.
func startHeldTask(t *testing.T, h *HashedWheelTimer) (release, finished chan struct{}) {
	t.Helper()
	started := make(chan struct{})
	release, finished = make(chan struct{}), make(chan struct{})
	_, err := h.AfterFunc(0, func() {
		close(started)
		<-release
		close(finished)
	})
	require.NoError(t, err)
	<-started
	return release, finished
}

// slowTasksLate schedules the slow tasks on h and returns how late each
// started after its deadline, sorted.
func slowTasksLate(tb testing.TB, h *HashedWheelTimer) []time.Duration {
	tb.Helper()
	return startLateness(slowTasks, slowWork, func(run func(due time.Time)) {
		task := TaskFunc(func(to Timeout) { run(to.Deadline()) })
		for range slowTasks {
			mustSchedule(tb, h, task, slowDelay)
		}
	})
}

// concurrently starts do(0), …, do(n-1), each on a goroutine of its own,
// all held until start is called, so that they race; wait joins them.
func concurrently(n int, do func(i int)) (start, wait func()) {
	start, joined := racetest.Producers(n, func(p, _ int) bool {
		do(p)
		return false // one call each
	})
	return start, func() { joined() }
}

// Executors.

// goExecutor starts a goroutine per task: the executor with no limit.
type goExecutor struct{}

func (goExecutor) Execute(task func()) error {
	go task()
	return nil
}

// executorFunc adapts a function to pool.Executor.
type executorFunc func(func()) error

func (f executorFunc) Execute(task func()) error { return f(task) }

// refusingExecutor refuses every task, or panics without running it, and
// counts the calls.
type refusingExecutor struct {
	panics bool
	calls  atomic.Int64
}

func (e *refusingExecutor) Execute(func()) error {
	e.calls.Add(1)
	if e.panics {
		panic("executor exploded")
	}
	return errors.New("executor full")
}

// Loggers.

// logBuffer collects a logger's output; the worker and the pool write it
// concurrently with the test reading it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogBuffer returns a text logger and the buffer it writes to.
func newLogBuffer() (*logBuffer, *slog.Logger) {
	b := &logBuffer{}
	return b, slog.New(slog.NewTextHandler(b, nil))
}

// discardLogger returns a logger that writes nothing.
func discardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newFakeAt returns a fake clock whose Nanotime reads start.
func newFakeAt(start time.Duration) *clock.Fake {
	fake := clock.NewFake(time.Now())
	fake.Jump(start)
	return fake
}
