package dispatch_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// concurrency counts the tasks running at once and keeps the most seen.
type concurrency struct{ running, most atomic.Int32 }

func (c *concurrency) enter() {
	n := c.running.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
}

func (c *concurrency) exit() { c.running.Add(-1) }

// TestASecondListWaitsForASlotWithoutExecute: on an executor that starts a
// goroutine per call and bounds nothing itself, a list dispatched while
// the first list's drain functions hold every slot gets no Execute call and
// arms no check: none of its tasks starts while the first list's tasks
// hold every slot. Each task of the first list that returns frees its
// drain function, which starts the second list's next task at once, so
// never more than Parallelism tasks run.
func TestASecondListWaitsForASlotWithoutExecute(t *testing.T) {
	const size = 2 // no more than a dispatch starts on one processor
	exec, after := &goExecutor{}, &manualAfter{}
	first, second := newHeldTasks(size), newHeldTasks(size)
	var c concurrency
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: size, After: after.after, Run: func(task int) {
		c.enter()
		defer c.exit()
		if task <= size {
			first.run(task)
		} else {
			second.run(task)
		}
	}})
	d.Dispatch([]int{1, 2})
	first.awaitStarts(t, size)
	d.Dispatch([]int{3, 4})
	assert.Equal(t, int64(size), exec.calls.Load(), "Execute calls: the second list waits for a slot")
	select {
	case <-second.started:
		require.Fail(t, "a task of the second list started while the first list's held every slot")
	case <-time.After(20 * time.Millisecond): // the claim is that nothing starts: a bounded look
	}
	for range size {
		first.permit <- struct{}{} // a task of the first list returns
		second.awaitStarts(t, 1)   // its drain function starts the second list's next task
	}
	close(first.release)
	close(second.release)
	closeAndWaitIdle(t, d)
	assert.Equal(t, int64(size), exec.calls.Load(), "Execute calls: drain functions went on to the second list")
	assert.Zero(t, after.armed, "checks armed")
	assert.LessOrEqual(t, c.most.Load(), int32(size), "tasks running at once")
}

// TestAListGrownBeyondTheBoundWaitsInTurn: a list whose drain functions
// are all held by slow tasks grows only into the slots free: the check
// that asks for more queues the list for the rest and arms no further
// check. A drain function that exhausts an earlier list goes on with it,
// and a list dispatched after it waits until it has no task left to start.
func TestAListGrownBeyondTheBoundWaitsInTurn(t *testing.T) {
	procs := 2 * runtime.GOMAXPROCS(0) // drain functions a dispatch starts with
	size, slowTasks := procs+2, 2*procs+4
	exec, after := &goExecutor{}, &manualAfter{}
	slow, other := newHeldTasks(slowTasks), newHeldTasks(2)
	var c concurrency
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: size, After: after.after, Run: func(task int) {
		c.enter()
		defer c.exit()
		if task < 0 {
			other.run(task)
		} else {
			slow.run(task)
		}
	}})
	d.Dispatch([]int{-1}) // holds one slot
	other.awaitStarts(t, 1)
	d.Dispatch(sequence(slowTasks))
	slow.awaitStarts(t, int64(procs))
	after.fire(t) // its drain functions all held: it asks for two more, one slot is free
	slow.awaitStarts(t, 1)
	assert.Equal(t, int64(size), exec.calls.Load(), "drain functions: the executor's size")
	assert.Empty(t, after.take(), "a list waiting in the queue arms no check")

	d.Dispatch([]int{-2}) // waits behind the grown list
	assert.Equal(t, int64(size), exec.calls.Load(), "no Execute for a list beyond the bound")
	other.permit <- struct{}{} // the first list's drain function goes on with the grown one
	slow.awaitStarts(t, 1)
	slow.permit <- struct{}{} // the grown list has tasks left: its drain function keeps to it
	slow.awaitStarts(t, 1)
	select {
	case <-other.started:
		require.Fail(t, "a later list overtook an earlier one's unstarted tasks")
	default:
	}
	close(slow.release) // the grown list drains, and a drain function goes on to the last list
	other.awaitStarts(t, 1)
	close(other.release)
	closeAndWaitIdle(t, d)
	assert.Equal(t, int64(size), exec.calls.Load(), "Execute calls")
	assert.Empty(t, after.take(), "checks armed")
	assert.LessOrEqual(t, c.most.Load(), int32(size), "tasks running at once")
}

// TestManyListsNeverRunMoreThanTheExecutorsSize: lists dispatched one
// after another, faster than their tasks run, on the ants pool the timer
// makes, of the same size: never more than its size of tasks run at once,
// every task runs once, and the dispatching goroutine never waits on the
// pool for long (one that waited for every task would take far longer).
func TestManyListsNeverRunMoreThanTheExecutorsSize(t *testing.T) {
	const size, lists, perList = 3, 200, 10
	exec, err := antspool.New(size)
	require.NoError(t, err)
	defer func() { require.NoError(t, exec.ReleaseContext(t.Context())) }()
	runs := make([]atomic.Int32, lists*perList+1)
	var c concurrency
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Run: func(task int) {
		c.enter()
		defer c.exit()
		runs[task].Add(1)
		if task%perList == 0 {
			time.Sleep(time.Millisecond) // a slow one in each list
		}
		runtime.Gosched()
	}})
	for l := range lists {
		tasks := make([]int, perList)
		for i := range tasks {
			tasks[i] = l*perList + i + 1
		}
		d.Dispatch(tasks)
	}
	closeAndWaitIdle(t, d)
	for task := 1; task < len(runs); task++ {
		require.Equal(t, int32(1), runs[task].Load(), "runs of task %d", task)
	}
	assert.LessOrEqual(t, c.most.Load(), int32(size), "tasks running at once")
}
