package dispatch_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// manualAfter keeps the checks a dispatcher arms, for the test to fire.
type manualAfter struct {
	mu      sync.Mutex
	pending []func()
	armed   int
}

func (m *manualAfter) after(d time.Duration, f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d != dispatch.GrowInterval {
		panic(fmt.Sprintf("a check armed for %v", d))
	}
	m.pending = append(m.pending, f)
	m.armed++
}

// take returns the checks armed and not yet fired.
func (m *manualAfter) take() []func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pending
	m.pending = nil
	return p
}

// fire fires the one check armed, failing the test if there is not
// exactly one.
func (m *manualAfter) fire(tb testing.TB) {
	tb.Helper()
	checks := m.take()
	require.Len(tb, checks, 1, "checks armed")
	checks[0]()
}

// heldTasks makes tasks that each signal started, then hold their drain
// function until given a permit or released.
type heldTasks struct {
	started chan struct{}
	permit  chan struct{}
	release chan struct{}
}

func newHeldTasks(n int) *heldTasks {
	return &heldTasks{started: make(chan struct{}, n), permit: make(chan struct{}, n), release: make(chan struct{})}
}

func (h *heldTasks) run(int) {
	h.started <- struct{}{}
	select {
	case <-h.permit:
	case <-h.release:
	}
}

// awaitStarts waits until k more tasks have started.
func (h *heldTasks) awaitStarts(tb testing.TB, k int64) {
	tb.Helper()
	for i := int64(0); i < k; i++ {
		select {
		case <-h.started:
		case <-time.After(waitBound):
			require.Fail(tb, fmt.Sprintf("%d of %d tasks started", i, k))
		}
	}
}

// TestAListGrowsWhileItsDrainFunctionsAreHeld: tasks that hold their
// drain function until the test lets them go, more of them than a
// dispatch starts drain functions for. Once every drain function has
// started, the list arms one check. While more tasks started since the
// last check than there are drain functions, a check starts none and arms
// the next; once the drain functions are held, one check starts a drain
// function for every task expected to be slow, up to the executor's size;
// once they have started, none is armed: at the executor's size, or with
// every task started, growing cannot help.
func TestAListGrowsWhileItsDrainFunctionsAreHeld(t *testing.T) {
	for _, room := range []int64{1, 2} { // the executor's room, in halves of the tasks
		t.Run(fmt.Sprintf("room for %d/2 of the tasks", room), func(t *testing.T) {
			n := int64(8 * runtime.GOMAXPROCS(0))
			parallelism := n * room / 2
			exec, after, tasks := &goExecutor{}, &manualAfter{}, newHeldTasks(int(n))
			d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: int(parallelism), After: after.after, Run: tasks.run})
			d.Dispatch(sequence(int(n)))
			drainers := exec.calls.Load()
			require.Less(t, drainers, parallelism, "a dispatch starts fewer drain functions than the executor's size")
			tasks.awaitStarts(t, drainers)

			for range drainers { // short tasks: each drain function runs one more
				tasks.permit <- struct{}{}
			}
			tasks.awaitStarts(t, drainers)
			after.fire(t)
			require.Equal(t, drainers, exec.calls.Load(), "a check after tasks kept starting starts no drain function")

			// Half the tasks started, half of those short: one slow task
			// expected per two unstarted, and as many again.
			after.fire(t) // none started since the last check
			want := min(parallelism, n-drainers)
			require.Equal(t, want, exec.calls.Load(), "one check starts a drain function per slow task expected, up to the executor's size")
			tasks.awaitStarts(t, want-drainers)
			// A check armed as the last drain function started, before it
			// claimed the last task, finds nothing to do.
			for _, check := range after.take() {
				check()
			}
			assert.Empty(t, after.take(), "no check armed at the executor's size, nor with every task started")
			assert.Equal(t, want, exec.calls.Load(), "no drain function started with every task started")
			close(tasks.release)
			closeAndWaitIdle(t, d)
			assert.Equal(t, want, exec.calls.Load(), "no more drain functions than a check started")
		})
	}
}

// TestAListWaitingForTheExecutorArmsNoCheck: a dispatch whose drain
// functions wait for the executor, or that has as many drain functions as
// the executor's size, all held, arms no check: nothing it could do would
// start a task. What frees a goroutine starts the next task.
func TestAListWaitingForTheExecutorArmsNoCheck(t *testing.T) {
	t.Run("at the executor's size", func(t *testing.T) {
		const size = 2
		exec, after, tasks := &goExecutor{}, &manualAfter{}, newHeldTasks(3*size)
		d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: size, After: after.after, Run: tasks.run})
		d.Dispatch(sequence(3 * size))
		tasks.awaitStarts(t, size)
		assert.Zero(t, after.armed, "checks armed")
		for range 2 * size {
			tasks.permit <- struct{}{} // a task returns: its drain function starts the next
			tasks.awaitStarts(t, 1)
		}
		close(tasks.release)
		closeAndWaitIdle(t, d)
		assert.Zero(t, after.armed, "checks armed")
		assert.Equal(t, int64(size), exec.calls.Load(), "drain functions")
	})
	t.Run("waiting for the executor", func(t *testing.T) {
		exec, after, tasks := &queueExecutor{}, &manualAfter{}, newHeldTasks(100)
		d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 100, After: after.after, Run: tasks.run})
		d.Dispatch(sequence(100))
		require.Less(t, len(exec.queued), 100, "fewer drain functions than tasks")
		done := make(chan struct{})
		go func() {
			defer close(done)
			exec.queued[0]() // one starts; the others still wait for the executor
		}()
		tasks.awaitStarts(t, 1)
		assert.Zero(t, after.armed, "checks armed")
		close(tasks.release)
		<-done
		for _, f := range exec.queued[1:] {
			f()
		}
		closeAndWaitIdle(t, d)
	})
}

// goexitOnceExecutor ends the goroutine of its first caller with
// runtime.Goexit, before it runs anything; then it starts a goroutine per
// function.
type goexitOnceExecutor struct{ calls atomic.Int64 }

func (e *goexitOnceExecutor) Execute(f func()) error {
	if e.calls.Add(1) == 1 {
		runtime.Goexit()
	}
	go f()
	return nil
}

// TestAnExecuteEndingItsGoroutineLeavesTheListGrowing: an Execute that
// ends the dispatching goroutine with runtime.Goexit hands over one drain
// function, which then runs on a goroutine of its own, and leaves none
// counted that never started: the list still grows, and tasks that wait
// for each other all start.
func TestAnExecuteEndingItsGoroutineLeavesTheListGrowing(t *testing.T) {
	n := 4*runtime.GOMAXPROCS(0) + 8
	var arrived atomic.Int64
	all, abort := make(chan struct{}), make(chan struct{})
	d := dispatch.New(dispatch.Config[int]{Executor: &goexitOnceExecutor{}, Parallelism: n, Run: func(int) {
		if arrived.Add(1) == int64(n) {
			close(all)
		}
		select {
		case <-all:
		case <-abort:
		}
	}})
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		d.Dispatch(sequence(n))
	}()
	<-dispatched
	select {
	case <-all:
	case <-time.After(waitBound):
		got := arrived.Load()
		close(abort)
		closeAndWaitIdle(t, d)
		require.Fail(t, "tasks due together did not all start", "%d of %d", got, n)
	}
	closeAndWaitIdle(t, d)
}
