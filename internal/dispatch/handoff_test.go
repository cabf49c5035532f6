package dispatch_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/histogram"
)

// boundedExecutor runs each function on a goroutine of its own, at most
// size at once: it refuses a function while size of them have not
// returned, counting a function that ended its goroutine with
// runtime.Goexit as returned only once its goroutine has ended. It records
// the most it ran at once.
type boundedExecutor struct {
	size            int32
	active, most    atomic.Int32
	calls, refusals atomic.Int32
	running         sync.WaitGroup
}

func (e *boundedExecutor) Cap() int { return int(e.size) }

func (e *boundedExecutor) Execute(f func()) error {
	e.calls.Add(1)
	n := e.active.Add(1)
	if n > e.size {
		e.active.Add(-1)
		e.refusals.Add(1)
		return errFull
	}
	for m := e.most.Load(); n > m && !e.most.CompareAndSwap(m, n); m = e.most.Load() {
	}
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		defer e.active.Add(-1) // after f, whether it returned or called Goexit
		f()
	}()
	return nil
}

// TestTasksStartInDispatchOrderWhateverOrderDrainFunctionsStartIn: drain
// functions of three dispatches held back by the executor, then started
// newest first: the tasks still start in the order they were dispatched,
// the first dispatch's before the second's.
func TestTasksStartInDispatchOrderWhateverOrderDrainFunctionsStartIn(t *testing.T) {
	exec := &queueExecutor{}
	var mu sync.Mutex
	var order []int
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 64, Run: func(task int) {
		mu.Lock()
		order = append(order, task)
		mu.Unlock()
	}})
	d.Dispatch(dues(1, 2, 3))
	d.Dispatch(dues(4, 5))
	d.Dispatch(dues(6, 7, 8, 9))
	require.NotEmpty(t, exec.queued)
	for i := len(exec.queued) - 1; i >= 0; i-- {
		exec.queued[i]() // one at a time, newest first
	}
	closeAndWaitIdle(t, d)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}, order)
}

// TestFinishedSegmentsLendTheirSlicesToLaterDispatches: after as many small
// dispatches as the dispatcher keeps slices of, four large ones queued
// behind each other, as a storm's are, then run; four more take the four
// finished slices and allocate none of their own. A second after the last
// segment queued behind another, TrimSpares keeps one.
func TestFinishedSegmentsLendTheirSlicesToLaterDispatches(t *testing.T) {
	const lists, n = 4, 1000
	exec := &queueExecutor{}
	var now int64 // the clock of Config.Now
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 1, Run: func(int) {},
		Now: func() int64 { return now }})
	runQueued := func() {
		for len(exec.queued) > 0 {
			f := exec.queued[0]
			exec.queued = exec.queued[1:]
			f()
		}
	}
	for range dispatch.MaxSpares {
		d.Dispatch(sequence(3))
	}
	runQueued() // small slices kept: the large ones must take their place
	var tasks [lists][]dispatch.Due[int]
	for i := range tasks {
		tasks[i] = sequence(n)
	}
	round := func() {
		for i := range tasks {
			d.Dispatch(tasks[i])
		}
		runQueued()
	}
	round() // the first large dispatches allocate their slices
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	round()
	runtime.ReadMemStats(&after)
	slice := uint64(n * unsafe.Sizeof(dispatch.Due[int]{}))
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, slice, "bytes allocated by four dispatches of %d tasks after four finished", n)

	kept := d.Spares()
	d.TrimSpares(now + int64(time.Second) - 1)
	assert.Equal(t, kept, d.Spares(), "slices kept within a second of a segment queued behind another")
	d.TrimSpares(now + int64(time.Second))
	assert.Equal(t, 1, d.Spares(), "slices kept a second after")
	closeAndWaitIdle(t, d)
}

// TestDrainFunctionsNeverExceedTheBoundAcrossDispatches: many dispatches
// of slow tasks on an executor of size 3 that refuses a fourth function:
// never more than three are handed over at once, none is refused, and the
// tasks of later dispatches wait in the queue and start as drain functions
// come back, every one once.
func TestDrainFunctionsNeverExceedTheBoundAcrossDispatches(t *testing.T) {
	const size, dispatches, per = 3, 20, 5
	exec := &boundedExecutor{size: size}
	var runs [dispatches * per]atomic.Int32
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Run: func(task int) {
		runs[task].Add(1)
		time.Sleep(time.Millisecond) // the work: slow enough for the queue to fill
	}})
	for k := range dispatches {
		tasks := make([]dispatch.Due[int], per)
		for i := range tasks {
			tasks[i].Task = k*per + i
		}
		d.Dispatch(tasks)
	}
	closeAndWaitIdle(t, d)
	exec.running.Wait()
	for i := range runs {
		assert.Equal(t, int32(1), runs[i].Load(), "runs of task %d", i)
	}
	assert.LessOrEqual(t, exec.most.Load(), int32(size), "drain functions out at once")
	assert.Zero(t, exec.refusals.Load(), "the executor was handed more than its size")
}

// TestSlowTasksDueTogetherAllStart: 300 tasks dispatched together, each
// blocking until every one has started, on an executor of room for all:
// the dispatcher grows from its first few drain functions to one per
// task, and the drain functions begun hand most of them out, two each,
// rather than the check's goroutine all of them. Without growth the first
// would wait forever.
func TestSlowTasksDueTogetherAllStart(t *testing.T) {
	const n = 300
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	exec := &callerExecutor{}
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: n, Run: func(int) {
		started.Done()
		<-all
	}})
	d.Dispatch(sequence(n))
	select {
	case <-all:
	case <-time.After(waitBound):
		require.Fail(t, "slow tasks waited for each other")
	}
	closeAndWaitIdle(t, d)
	assert.Equal(t, int64(n), exec.calls.Load(), "a drain function for each task")
	assert.Greater(t, exec.fromDrains.Load(), int64(n/2), "handed out by the drain functions begun")
}

// callerExecutor runs each function on a goroutine of its own and counts
// the Execute calls made from a drain function (dispatch.InTask).
type callerExecutor struct{ calls, fromDrains atomic.Int64 }

func (e *callerExecutor) Execute(f func()) error {
	e.calls.Add(1)
	if dispatch.InTask() {
		e.fromDrains.Add(1)
	}
	go f()
	return nil
}

// TestGoexitHandsTheExecutorNothingBeforeItsGoroutineEnds: on an executor
// of one goroutine that refuses a second function, tasks that call
// runtime.Goexit: the tasks after them go on without a refusal, for
// nothing is handed to the executor before the ending goroutine has
// returned to it; every task runs once, one at a time.
func TestGoexitHandsTheExecutorNothingBeforeItsGoroutineEnds(t *testing.T) {
	const n, exitEvery = 400, 40
	exec := &boundedExecutor{size: 1}
	var runs [n + 1]atomic.Int32
	var running, most atomic.Int32
	var refusals atomic.Int32
	d := dispatch.New(dispatch.Config[int]{
		Executor: exec,
		Refused:  func(error) { refusals.Add(1) },
		Run: func(task int) {
			now := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			runs[task].Add(1)
			if task%exitEvery == 0 {
				runtime.Goexit()
			}
		},
	})
	for k := 0; k < n; k += 10 {
		tasks := make([]dispatch.Due[int], 10)
		for i := range tasks {
			tasks[i].Task = k + i + 1
		}
		d.Dispatch(tasks)
	}
	closeAndWaitIdle(t, d)
	exec.running.Wait()
	for task := 1; task <= n; task++ {
		assert.Equal(t, int32(1), runs[task].Load(), "runs of task %d", task)
	}
	assert.Zero(t, refusals.Load(), "refusals")
	assert.Equal(t, int32(1), most.Load(), "tasks running at once")
}

// TestNothingAFinishedTaskCapturedStaysReachable: tasks holding 64 KiB
// each, some of which call runtime.Goexit: once they have run, none is
// reachable from the dispatcher, which is still in use and keeps its
// slices for reuse.
func TestNothingAFinishedTaskCapturedStaysReachable(t *testing.T) {
	const n = 100
	var collected atomic.Int32
	d := dispatch.New(dispatch.Config[*[]byte]{Executor: &goExecutor{}, Parallelism: 8, Run: func(b *[]byte) {
		if (*b)[0] == 1 {
			runtime.Goexit()
		}
	}})
	tasks := make([]dispatch.Due[*[]byte], n)
	for i := range tasks {
		b := make([]byte, 64<<10)
		b[0] = byte(i % 2)
		tasks[i].Task = &b
		runtime.AddCleanup(tasks[i].Task, func(*atomic.Int32) { collected.Add(1) }, &collected)
	}
	d.Dispatch(tasks)
	d.Close()
	<-d.Idle()
	require.Eventually(t, func() bool {
		runtime.GC()
		return collected.Load() == n
	}, waitBound, time.Millisecond, "tasks still reachable after they ran")
	runtime.KeepAlive(d)
}

// TestLatenessSplitsIntoHandOverAndHandOff: on an executor of one
// goroutine, two tasks dispatched 1ms and 3ms after their deadlines, the
// first holding the goroutine for 20ms: each is counted late by its
// Dispatch's lateness plus its wait to start, the second's wait at least
// the hold.
func TestLatenessSplitsIntoHandOverAndHandOff(t *testing.T) {
	const hold = 20 * time.Millisecond
	d := dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 1,
		Now: func() int64 { return int64(10 * time.Millisecond) },
		Run: func(task int) {
			if task == 1 {
				time.Sleep(hold) // the work that holds the goroutine
			}
		}})
	d.Dispatch([]dispatch.Due[int]{{Deadline: int64(9 * time.Millisecond), Task: 1}, {Deadline: int64(7 * time.Millisecond), Task: 2}})
	closeAndWaitIdle(t, d)
	late, over, off := d.Lateness()
	assert.Equal(t, uint64(2), late.Count())
	assert.Equal(t, uint64(1), over.Counts[slotOf(int64(time.Millisecond))])
	assert.Equal(t, uint64(1), over.Counts[slotOf(int64(3*time.Millisecond))])
	assert.Equal(t, int64(3*time.Millisecond), over.Max)
	assert.GreaterOrEqual(t, off.Max, int64(hold), "the second waited for the first")
	assert.GreaterOrEqual(t, late.Max, int64(3*time.Millisecond+hold))
	assert.Equal(t, over.Sum+off.Sum, late.Sum, "each task's lateness is its two parts")
}

// slotOf returns the histogram slot of a duration of ns nanoseconds: the
// first whose upper bound is at least it.
func slotOf(ns int64) int {
	s := 0
	for s < histogram.Len-1 && ns > histogram.Upper(s) {
		s++
	}
	return s
}

// TestNoCheckWhileADrainFunctionWaitsForTheExecutor: while a drain
// function handed over has not begun (the executor holds it), the
// dispatcher hands over nothing more however long its tasks wait: growing
// could not help, and it does not poll.
func TestNoCheckWhileADrainFunctionWaitsForTheExecutor(t *testing.T) {
	exec := &queueExecutor{}
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 64, Run: func(int) {}})
	d.Dispatch(sequence(100))
	handed := len(exec.queued)
	time.Sleep(20 * time.Millisecond) // eighty check intervals: time is the subject
	assert.Equal(t, handed, len(exec.queued), "drain functions handed over while none had begun")
	for _, f := range exec.queued {
		f()
	}
	closeAndWaitIdle(t, d)
}

// lateExecutor runs each function at once, on the caller, and keeps it.
// Its next call after rerun is set first runs again the function of call
// number rerun: the late second run of an executor that runs functions
// twice, which may come once the hand-off is given back and taken again.
type lateExecutor struct {
	calls []func()
	rerun int
}

func (e *lateExecutor) Execute(f func()) error {
	if e.rerun > 0 {
		late := e.calls[e.rerun-1]
		e.rerun = 0
		late()
	}
	e.calls = append(e.calls, f)
	f()
	return nil
}

// TestALateSecondRunOfAHandOverLosesNoDrainFunction: a Dispatch takes
// again the three hand-offs the one before gave back and hands them over
// in turn; the late second run of the middle one's earlier hand-over comes
// as the first is handed over. Each drain function is still handed over
// once and returns, and every task runs once.
func TestALateSecondRunOfAHandOverLosesNoDrainFunction(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // a Dispatch of three tasks hands over three
	exec := &lateExecutor{}
	var ran atomic.Int64
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: 3, Run: func(int) { ran.Add(1) }})
	d.Dispatch(sequence(3))
	require.Len(t, exec.calls, 3)
	exec.rerun = 2 // the hand-off given back second is taken second, so handed over second
	d.Dispatch(sequence(3))
	assert.Equal(t, int64(6), ran.Load(), "every task once")
	assert.Equal(t, 6, len(exec.calls), "an Execute per drain function")
	assert.Zero(t, d.Outstanding(), "every drain function counted out returned")
	closeAndWaitIdle(t, d)
}
