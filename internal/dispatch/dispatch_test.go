package dispatch_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
)

// TestMain fails the package if a test leaves a drain function running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitBound bounds every wait for work on other goroutines: far more than
// the work needs, so that a lost task fails the test instead of hanging it.
const waitBound = 10 * time.Second

// goExecutor starts a goroutine per function and counts the calls.
type goExecutor struct{ calls atomic.Int64 }

func (e *goExecutor) Execute(f func()) error {
	e.calls.Add(1)
	go f()
	return nil
}

// twiceExecutor runs every function twice, on two goroutines at once;
// wait joins them.
type twiceExecutor struct{ running sync.WaitGroup }

func (e *twiceExecutor) Execute(f func()) error {
	e.running.Add(2)
	for range 2 {
		go func() {
			defer e.running.Done()
			f()
		}()
	}
	return nil
}

func (e *twiceExecutor) wait() { e.running.Wait() }

var errFull = errors.New("executor full")

// refusingExecutor refuses every function, or panics without running it.
type refusingExecutor struct{ panics bool }

func (e refusingExecutor) Execute(func()) error {
	if e.panics {
		panic("executor exploded")
	}
	return errFull
}

// queueExecutor keeps the functions it is given, for the test to run.
type queueExecutor struct{ queued []func() }

func (e *queueExecutor) Execute(f func()) error {
	e.queued = append(e.queued, f)
	return nil
}

// sequence returns the tasks 1, …, n.
func sequence(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

// closeAndWaitIdle closes d and waits until every task it dispatched has
// returned.
func closeAndWaitIdle(tb testing.TB, d *dispatch.Dispatcher[int]) {
	tb.Helper()
	d.Close()
	select {
	case <-d.Idle():
	case <-time.After(waitBound):
		require.Fail(tb, fmt.Sprintf("not idle within %v: %d tasks in flight", waitBound, d.InFlight()))
	}
	assert.Zero(tb, d.InFlight(), "in flight once idle")
}

// TestInlineRunsTasksOnTheCallerInOrder: with no executor, Dispatch runs
// every task itself, on the calling goroutine and in order, before it
// returns, and clears the slice it was given.
func TestInlineRunsTasksOnTheCallerInOrder(t *testing.T) {
	caller := goid.Current()
	var order []int
	var goroutines []uint64
	d := dispatch.New(dispatch.Config[int]{Run: func(task int) {
		order = append(order, task)
		goroutines = append(goroutines, goid.Current())
	}})
	require.True(t, d.Inline())
	tasks := []int{3, 1, 4, 1, 5, 9, 2, 6}
	want := append([]int(nil), tasks...)
	d.Dispatch(tasks)
	assert.Equal(t, want, order, "every task ran, in order, before Dispatch returned")
	for i, g := range goroutines {
		assert.Equal(t, caller, g, "task %d ran on another goroutine", i)
	}
	assert.Equal(t, make([]int, len(want)), tasks, "the slice is cleared")
	assert.Zero(t, d.InFlight())

	select {
	case <-d.Idle():
		assert.Fail(t, "idle before Close")
	default:
	}
	d.Close()
	select {
	case <-d.Idle():
	default:
		assert.Fail(t, "Close with nothing in flight is not idle at once")
	}
}

// TestEveryTaskRunsOnceOnAGoroutinePerCall: on an executor that starts a
// goroutine per call, every task runs exactly once, the slice is cleared
// when Dispatch returns, and InFlight drops to zero.
func TestEveryTaskRunsOnceOnAGoroutinePerCall(t *testing.T) {
	const n = 1000
	runs := make([]atomic.Int32, n+1)
	exec := &goExecutor{}
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 64, Run: func(task int) { runs[task].Add(1) }})
	require.False(t, d.Inline())
	tasks := sequence(n)
	d.Dispatch(tasks)
	assert.Equal(t, make([]int, n), tasks, "Dispatch copies the tasks and clears the slice")
	closeAndWaitIdle(t, d)
	for task := 1; task <= n; task++ {
		assert.Equal(t, int32(1), runs[task].Load(), "runs of task %d", task)
	}
	assert.Positive(t, exec.calls.Load())
}

// TestIdleWaitsForTheLastTask: after Close, Idle stays open while a task
// runs and closes once it returns.
func TestIdleWaitsForTheLastTask(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	d := dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 4, Run: func(task int) {
		if task == 1 {
			close(started)
			<-release
		}
	}})
	d.Dispatch(sequence(3))
	<-started
	d.Close()
	select {
	case <-d.Idle():
		assert.Fail(t, "idle while a task runs")
	default:
	}
	assert.Positive(t, d.InFlight(), "the blocked task is in flight")
	close(release)
	closeAndWaitIdle(t, d)
}

// TestEveryTaskRunsOnceOnAFaultyExecutor: an executor that runs every
// function twice, one that refuses every function and one that panics:
// every task still runs exactly once, and Refused is called for each
// refusal, with the error, and for no other.
func TestEveryTaskRunsOnceOnAFaultyExecutor(t *testing.T) {
	twice := &twiceExecutor{}
	for _, c := range []struct {
		name    string
		exec    dispatch.Executor
		refused string // what each refusal's error says; "" if none
	}{
		{"runs twice", twice, ""},
		{"refuses", refusingExecutor{}, errFull.Error()},
		{"panics", refusingExecutor{panics: true}, "executor panicked: executor exploded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 500
			runs := make([]atomic.Int32, n+1)
			var refusals []error // Refused runs on the dispatching goroutine
			d := dispatch.New(dispatch.Config[int]{
				Executor:    c.exec,
				Parallelism: 8,
				Run:         func(task int) { runs[task].Add(1) },
				Refused:     func(err error) { refusals = append(refusals, err) },
			})
			d.Dispatch(sequence(n))
			closeAndWaitIdle(t, d)
			twice.wait() // a second run of a drain function may come after the last task
			for task := 1; task <= n; task++ {
				assert.Equal(t, int32(1), runs[task].Load(), "runs of task %d", task)
			}
			if c.refused == "" {
				assert.Empty(t, refusals)
				return
			}
			require.NotEmpty(t, refusals, "Refused was not called")
			for _, err := range refusals {
				assert.EqualError(t, err, c.refused)
			}
			if !c.exec.(refusingExecutor).panics {
				assert.ErrorIs(t, refusals[0], errFull, "the executor's own error")
			}
		})
	}
}

// TestGrowStartsADrainFunctionForEverySlowTaskExpected: tasks that block
// until released, on an executor with room for a given number. A dispatch
// starts fewer drain functions than there are tasks, each held by a slow
// task; Grow within the first interval starts none, then, once an interval
// shows the drain functions held, one Grow starts a drain function for
// every task expected to be slow at the rate seen so far, here all, up to
// the executor's size; then Grow and Waiting report that nothing waits
// unless the executor is full.
func TestGrowStartsADrainFunctionForEverySlowTaskExpected(t *testing.T) {
	for _, room := range []int64{1, 2} { // the executor's room, in halves of the tasks
		t.Run(fmt.Sprintf("room for %d/2 of the tasks", room), func(t *testing.T) {
			n := int64(8 * runtime.GOMAXPROCS(0))
			parallelism := n * room / 2
			exec := &goExecutor{}
			started := make(chan struct{}, n)
			release := make(chan struct{})
			fake := clock.NewFake(time.Now())
			d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: int(parallelism), Now: fake.Nanotime,
				Run: func(int) {
					started <- struct{}{}
					<-release
				}})
			// Each drain function claims one task and is held by it: wait for k
			// of them, so that what Grow sees does not depend on scheduling.
			awaitStarts := func(k int64) {
				t.Helper()
				for i := int64(0); i < k; i++ {
					select {
					case <-started:
					case <-time.After(waitBound):
						require.Fail(t, fmt.Sprintf("%d of %d drain functions started their task", i, k))
					}
				}
			}
			d.Dispatch(sequence(int(n)))
			drainers := exec.calls.Load()
			require.Less(t, drainers, parallelism, "a dispatch starts fewer drain functions than the executor's size")
			awaitStarts(drainers)
			require.True(t, d.Waiting(), "tasks wait unstarted")
			fake.Jump(dispatch.GrowInterval)
			require.True(t, d.Grow(), "tasks wait unstarted")
			require.Equal(t, drainers, exec.calls.Load(), "the first Grow gives a new dispatch time to start")
			require.True(t, d.Grow(), "tasks wait unstarted")
			require.Equal(t, drainers, exec.calls.Load(), "a Grow within the interval starts none")

			fake.Jump(dispatch.GrowInterval)
			d.Grow()
			require.Equal(t, parallelism, exec.calls.Load(), "one Grow starts a drain function per slow task expected, up to the executor's size")
			awaitStarts(parallelism - drainers)
			fake.Jump(dispatch.GrowInterval)
			assert.Equal(t, parallelism < n, d.Grow(), "tasks wait only if the executor is full")
			assert.Equal(t, parallelism < n, d.Waiting(), "tasks wait only if the executor is full")
			assert.Equal(t, parallelism, exec.calls.Load(), "no more drain functions than the executor's size")
			close(release)
			closeAndWaitIdle(t, d)
		})
	}
}

// TestSlowTasksGrowBesideShortOnes: a dispatch whose drain functions are
// held by slow tasks grows although a newer dispatch had thousands of
// short tasks claimed in the same interval: claims elsewhere do not help
// the tasks that wait behind the slow ones.
func TestSlowTasksGrowBesideShortOnes(t *testing.T) {
	const short = 10_000
	exec := &goExecutor{}
	slow := 4 * runtime.GOMAXPROCS(0)
	started, release := make(chan struct{}, slow), make(chan struct{})
	var shortDone sync.WaitGroup
	shortDone.Add(short)
	fake := clock.NewFake(time.Now())
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 1024, Now: fake.Nanotime, Run: func(task int) {
		if task > slow {
			shortDone.Done()
			return
		}
		started <- struct{}{}
		<-release
	}})
	d.Dispatch(sequence(slow))
	drainers := exec.calls.Load()
	require.Less(t, drainers, int64(slow), "a dispatch starts fewer drain functions than it has tasks")
	for range drainers {
		<-started // each drain function is held by a slow task
	}
	fake.Jump(dispatch.GrowInterval)
	require.True(t, d.Grow(), "slow tasks wait unclaimed")

	tasks := sequence(short)
	for i := range tasks {
		tasks[i] += slow
	}
	d.Dispatch(tasks)
	shortDone.Wait() // thousands of claims in this interval, none of the slow dispatch's
	calls := exec.calls.Load()
	fake.Jump(dispatch.GrowInterval)
	require.True(t, d.Grow(), "slow tasks wait unclaimed")
	assert.Equal(t, calls+drainers, exec.calls.Load(), "the slow dispatch's drain functions doubled")

	close(release)
	closeAndWaitIdle(t, d)
}

// TestShortTasksDoNotMakeItGrow: a drain function that keeps claiming
// short tasks needs no company, nor do drain functions that have yet to
// start, waiting for a processor. While one drain function has claimed
// more tasks in the interval than its dispatch has drain functions, and
// those of a newer dispatch have not started, Grow starts none, though
// tasks of both wait unclaimed.
func TestShortTasksDoNotMakeItGrow(t *testing.T) {
	const n, newer = 10_000, 100
	exec := &queueExecutor{}
	var ran atomic.Int64
	var gate int // the task that holds its drain function, set before any runs
	reached, release := make(chan struct{}), make(chan struct{})
	fake := clock.NewFake(time.Now())
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: n, Now: fake.Nanotime, Run: func(task int) {
		ran.Add(1)
		if task == gate {
			close(reached)
			<-release
		}
	}})
	d.Dispatch(sequence(n))
	first := exec.queued[0] // a drain function of the first dispatch
	later := sequence(newer)
	for i := range later {
		later[i] += n // not the gate
	}
	d.Dispatch(later)
	drainers := len(exec.queued)
	gate = 2 * drainers // short tasks claimed before it: more than there are drain functions
	require.Less(t, gate+100, n, "tasks are left unclaimed when the gate is reached")
	fake.Jump(dispatch.GrowInterval)
	require.True(t, d.Grow(), "tasks wait unclaimed")

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		first() // runs the first dispatch's short tasks up to the gate
	}()
	<-reached
	fake.Jump(dispatch.GrowInterval)
	assert.True(t, d.Grow(), "tasks still wait unclaimed")
	assert.Len(t, exec.queued, drainers, "Grow started a drain function")

	close(release)
	<-drained
	assert.Equal(t, int64(n), ran.Load(), "one drain function ran every task of its dispatch")
	fake.Jump(dispatch.GrowInterval)
	assert.True(t, d.Grow(), "the newer dispatch's tasks wait unclaimed")
	assert.Len(t, exec.queued, drainers, "Grow started a drain function")
	for _, f := range exec.queued {
		f() // the newer dispatch's run its tasks; the others find nothing left
	}
	assert.Equal(t, int64(n+newer), ran.Load())
	fake.Jump(dispatch.GrowInterval)
	assert.False(t, d.Grow(), "nothing waits")
	assert.False(t, d.Waiting(), "nothing waits")
	closeAndWaitIdle(t, d)
}

// TestCalledFromTask: CalledFromTask is true inside a task that a drain
// function runs on an executor, and false on the test's goroutine.
func TestCalledFromTask(t *testing.T) {
	assert.False(t, dispatch.CalledFromTask(), "on the test's goroutine")
	got := make(chan bool, 1)
	d := dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 1, Run: func(int) {
		got <- dispatch.CalledFromTask()
	}})
	d.Dispatch(sequence(1))
	select {
	case inTask := <-got:
		assert.True(t, inTask, "inside a task run by an executor")
	case <-time.After(waitBound):
		require.Fail(t, "the task never ran")
	}
	closeAndWaitIdle(t, d)
}

// dispatchAndGrow dispatches tasks, then calls Grow every GrowInterval,
// as a dispatching goroutine does, until stop is closed.
func dispatchAndGrow(d *dispatch.Dispatcher[int], tasks []int, stop <-chan struct{}) (done <-chan struct{}) {
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		d.Dispatch(tasks)
		tick := time.NewTicker(dispatch.GrowInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				d.Grow()
			}
		}
	}()
	return finished
}

// TestASlowTaskHoldsUpNoTaskClaimedWithIt: slow tasks among thousands of
// short ones due together, each slow one blocking until the test releases
// it: every short task runs meanwhile, including those a drain function
// claimed together with a slow task, whatever the number of processors.
func TestASlowTaskHoldsUpNoTaskClaimedWithIt(t *testing.T) {
	const n, slowEvery = 4000, 500 // 8 slow tasks
	release := make(chan struct{})
	var short sync.WaitGroup
	short.Add(n - n/slowEvery)
	runs := make([]atomic.Int32, n+1)
	d := dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 64, Run: func(task int) {
		runs[task].Add(1)
		if task%slowEvery == 0 {
			<-release
			return
		}
		short.Done()
	}})
	stop := make(chan struct{})
	growing := dispatchAndGrow(d, sequence(n), stop)
	shortRan := make(chan struct{})
	go func() { short.Wait(); close(shortRan) }()
	select {
	case <-shortRan:
	case <-time.After(waitBound):
		require.Fail(t, "short tasks waited behind slow ones")
	}
	close(release)
	close(stop)
	<-growing
	closeAndWaitIdle(t, d)
	for task := 1; task <= n; task++ {
		require.Equal(t, int32(1), runs[task].Load(), "runs of task %d", task)
	}
}

// TestATaskCallingGoexitLosesNoOtherTask: a task that calls runtime.Goexit,
// as t.FailNow does, ends its drain function's goroutine; the tasks it had
// claimed and those after it still run exactly once, and the dispatcher
// goes idle.
func TestATaskCallingGoexitLosesNoOtherTask(t *testing.T) {
	const n = 2000
	runs := make([]atomic.Int32, n+1)
	for name, exec := range map[string]dispatch.Executor{"goroutine per call": &goExecutor{}, "once": &queueExecutor{}} {
		t.Run(name, func(t *testing.T) {
			for i := range runs {
				runs[i].Store(0)
			}
			d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 2, Run: func(task int) {
				runs[task].Add(1)
				if task%100 == 50 {
					runtime.Goexit()
				}
			}})
			d.Dispatch(sequence(n))
			if q, ok := exec.(*queueExecutor); ok {
				for _, f := range q.queued {
					go f() // each on a goroutine a Goexit may end
				}
			}
			closeAndWaitIdle(t, d)
			for task := 1; task <= n; task++ {
				require.Equal(t, int32(1), runs[task].Load(), "runs of task %d", task)
			}
		})
	}
}
