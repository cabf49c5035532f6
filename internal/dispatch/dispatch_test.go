package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a drain function running.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
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

// sequence returns the tasks 1, …, n, due at 0.
func sequence(n int) []dispatch.Due[int] {
	s := make([]dispatch.Due[int], n)
	for i := range s {
		s[i].Task = i + 1
	}
	return s
}

// dues returns the tasks, due at 0.
func dues[T any](tasks ...T) []dispatch.Due[T] {
	s := make([]dispatch.Due[T], len(tasks))
	for i, t := range tasks {
		s[i].Task = t
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
	want := []int{3, 1, 4, 1, 5, 9, 2, 6}
	tasks := dues(want...)
	d.Dispatch(tasks)
	assert.Equal(t, want, order, "every task ran, in order, before Dispatch returned")
	for i, g := range goroutines {
		assert.Equal(t, caller, g, "task %d ran on another goroutine", i)
	}
	assert.Equal(t, make([]dispatch.Due[int], len(want)), tasks, "the slice is cleared")
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
	assert.Equal(t, make([]dispatch.Due[int], n), tasks, "Dispatch copies the tasks and clears the slice")
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

// TestInTask: InTask is true inside a task that a drain function runs on
// an executor, and false on the test's goroutine and in an inline task.
func TestInTask(t *testing.T) {
	assert.False(t, dispatch.InTask(), "on the test's goroutine")
	inline := dispatch.New(dispatch.Config[int]{Run: func(int) {
		assert.False(t, dispatch.InTask(), "in a task run inline")
	}})
	inline.Dispatch(sequence(1))
	got := make(chan bool, 1)
	d := dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 1, Run: func(int) {
		got <- dispatch.InTask()
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

// TestASlowTaskHoldsUpNoOtherTask: slow tasks among thousands of short
// ones due together, each slow one blocking until the test releases it:
// every short task runs meanwhile, whatever the number of processors.
func TestASlowTaskHoldsUpNoOtherTask(t *testing.T) {
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
	d.Dispatch(sequence(n))
	shortRan := make(chan struct{})
	go func() { short.Wait(); close(shortRan) }()
	select {
	case <-shortRan:
	case <-time.After(waitBound):
		require.Fail(t, "short tasks waited behind slow ones")
	}
	close(release)
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
	antsPool, err := antspool.New(2)
	require.NoError(t, err)
	defer func() { require.NoError(t, antsPool.ReleaseContext(context.Background())) }()
	for name, exec := range map[string]dispatch.Executor{"goroutine per call": &goExecutor{}, "pool": antsPool} {
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
			closeAndWaitIdle(t, d)
			for task := 1; task <= n; task++ {
				require.Equal(t, int32(1), runs[task].Load(), "runs of task %d", task)
			}
		})
	}
}

// TestTasksClaimedWithASlowOneRunWithoutIt: short tasks, so that drain
// functions claim many at once, with one among them that blocks until all
// the others have run, on two drain functions: the other steals what the
// blocked one claimed, so every task runs.
func TestTasksClaimedWithASlowOneRunWithoutIt(t *testing.T) {
	const n, slow = 1000, 700
	var others sync.WaitGroup
	others.Add(n - 1)
	d := dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 2, Run: func(task int) {
		if task != slow {
			others.Done()
			return
		}
		done := make(chan struct{})
		go func() { others.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(waitBound):
			assert.Fail(t, "tasks claimed with a blocked one never ran")
		}
	}})
	d.Dispatch(sequence(n))
	closeAndWaitIdle(t, d)
}
