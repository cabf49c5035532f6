// Package dispatch hands tasks that come due together to an executor so
// that they start together: a slow task delays no other task, up to the
// executor's size. The hashedwheel timer and the benchmark contenders built
// on the same engine share it, so that they differ only in how they find
// what is due.
//
// A dispatch is one list of due tasks and a claim cursor. The dispatcher
// hands the executor up to Parallelism copies of one drain function; each
// claims the next few tasks, runs them, and claims again until the list is
// empty. While many tasks remain a claim takes several, so that a storm of
// short tasks does not pay one contended atomic operation per task; as the
// list empties claims shrink to one task, so that no task waits behind a
// slow one for long. The lists are recycled: dispatching costs no
// allocation once the dispatcher is warm.
package dispatch

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
)

// Executor runs functions; pool.Executor satisfies it.
type Executor interface {
	Execute(task func()) error
}

// Config configures a Dispatcher.
type Config[T any] struct {
	// Executor runs the drain functions. Nil means inline: Dispatch runs
	// every task itself, in order, before it returns.
	Executor Executor
	// Run runs one task. It must recover its own panics.
	Run func(T)
	// Parallelism is the most drain functions one dispatch hands to the
	// executor: the executor's size. At least 1.
	Parallelism int
	// Refused is called, on the dispatching goroutine, when the executor
	// refuses a drain function or panics in Execute; the function then
	// runs on a goroutine of its own, so that no task is lost.
	Refused func(err error)
}

// maxKeptTasks bounds the capacity of the lists a dispatcher keeps for
// reuse, so that a storm's worth of pointers is not held once it has run.
const maxKeptTasks = 1 << 14

// maxKeptLists bounds how many emptied lists a dispatcher keeps for reuse.
const maxKeptLists = 4

// claimsPerDrainer sets how large a claim is: the unclaimed tasks divided
// by this many claims per drain function. Large enough that a claim holds
// a small share of the work, small enough that a storm of short tasks is
// claimed in runs.
const claimsPerDrainer = 4

// Dispatcher runs due tasks on an executor and tracks them until they
// return. Dispatch may be called from one goroutine at a time; the other
// methods are safe for concurrent use.
type Dispatcher[T any] struct {
	cfg      Config[T]
	inflight atomic.Int64 // tasks dispatched that have not returned
	closed   atomic.Bool
	idle     chan struct{} // closed once closed and nothing is in flight
	idleOnce sync.Once

	mu   sync.Mutex
	free [][]T // emptied task lists, for the caller's next batches
}

// New returns a dispatcher configured by cfg.
func New[T any](cfg Config[T]) *Dispatcher[T] {
	cfg.Parallelism = max(cfg.Parallelism, 1)
	if cfg.Refused == nil {
		cfg.Refused = func(error) {}
	}
	return &Dispatcher[T]{cfg: cfg, idle: make(chan struct{})}
}

// Inline reports whether tasks run on the dispatching goroutine.
func (d *Dispatcher[T]) Inline() bool { return d.cfg.Executor == nil }

// Dispatch runs tasks: inline, in order, before it returns; or on the
// executor, started together up to Parallelism at a time. It takes the
// slice and returns an empty one, with capacity once the dispatcher is
// warm, for the caller's next batch: tasks are never copied, and a
// dispatch costs two small allocations whatever its size.
func (d *Dispatcher[T]) Dispatch(tasks []T) (spare []T) {
	if len(tasks) == 0 {
		return tasks
	}
	d.inflight.Add(int64(len(tasks)))
	if d.Inline() {
		for i, t := range tasks {
			d.cfg.Run(t)
			var zero T
			tasks[i] = zero
		}
		d.finish(int64(len(tasks)))
		return keep(tasks[:0])
	}
	// A list is never reused, only its slice: an executor that runs a
	// drain function twice, or late, finds the cursor at the end.
	l := &list[T]{d: d, tasks: tasks, drainers: min(len(tasks), d.cfg.Parallelism)}
	drain := func() { drainMarked(l) }
	for range l.drainers {
		d.execute(drain)
	}
	return d.spare()
}

// execute hands one drain function to the executor, or, if it refuses or
// panics, runs it on a goroutine of its own.
func (d *Dispatcher[T]) execute(drain func()) {
	if err := safeExecute(d.cfg.Executor, drain); err != nil {
		d.cfg.Refused(err)
		go drain()
	}
}

func safeExecute(e Executor, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("executor panicked: %v", r)
		}
	}()
	return e.Execute(f)
}

// spare returns an emptied list for the caller to fill, or nil.
func (d *Dispatcher[T]) spare() []T {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.free)
	if n == 0 {
		return nil
	}
	s := d.free[n-1]
	d.free[n-1] = nil
	d.free = d.free[:n-1]
	return s
}

// recycle keeps an emptied list for reuse.
func (d *Dispatcher[T]) recycle(s []T) {
	if s = keep(s[:0]); s == nil {
		return
	}
	d.mu.Lock()
	if len(d.free) < maxKeptLists {
		d.free = append(d.free, s)
	}
	d.mu.Unlock()
}

// InFlight returns the number of dispatched tasks that have not returned.
func (d *Dispatcher[T]) InFlight() int64 { return d.inflight.Load() }

// Close tells the dispatcher that nothing more will be dispatched; Idle
// closes once every dispatched task has returned.
func (d *Dispatcher[T]) Close() {
	d.closed.Store(true)
	if d.inflight.Load() == 0 {
		d.signalIdle()
	}
}

// Idle returns a channel that is closed once Close has been called and
// every dispatched task has returned.
func (d *Dispatcher[T]) Idle() <-chan struct{} { return d.idle }

// finish counts n tasks that returned.
func (d *Dispatcher[T]) finish(n int64) {
	// The decrement comes before the load of closed, and Close stores
	// closed before it loads the count: one of the two sees the other.
	if d.inflight.Add(-n) == 0 && d.closed.Load() {
		d.signalIdle()
	}
}

func (d *Dispatcher[T]) signalIdle() { d.idleOnce.Do(func() { close(d.idle) }) }

// list is one dispatch: the due tasks and the cursor the drain functions
// claim them with.
type list[T any] struct {
	d        *Dispatcher[T]
	tasks    []T
	drainers int
	next     atomic.Int64 // index of the first unclaimed task
	finished atomic.Int64 // tasks that have returned
}

// drain claims and runs tasks until none is left to claim.
func (l *list[T]) drain() {
	n := int64(len(l.tasks))
	ran := int64(0)
	for {
		left := n - l.next.Load()
		if left <= 0 {
			break
		}
		size := max(left/int64(l.drainers*claimsPerDrainer), 1)
		first := l.next.Add(size) - size
		last := min(first+size, n)
		for i := first; i < last; i++ {
			l.d.cfg.Run(l.tasks[i])
			var zero T
			l.tasks[i] = zero // let it be collected; this index is ours alone
		}
		ran += max(last-first, 0)
	}
	if ran == 0 {
		return
	}
	// The drain function that finishes the last task recycles the slice:
	// every index has been claimed, so no drain function reads it again.
	if l.finished.Add(ran) == n {
		l.d.recycle(l.tasks)
	}
	l.d.finish(ran)
}

// keep returns s, or nil if its capacity is too large to keep.
func keep[T any](s []T) []T {
	if cap(s) > maxKeptTasks {
		return nil
	}
	return s
}

// drainer is what drainMarked runs; an interface keeps the marker a single,
// non-generic function whose frame CalledFromTask recognises.
type drainer interface{ drain() }

// drainMarked runs a drain function: every task run on an executor runs
// beneath it.
//
//go:noinline
func drainMarked(d drainer) { d.drain() }

// drainEntry is the entry address of drainMarked.
var drainEntry = reflect.ValueOf(drainMarked).Pointer()

// CalledFromTask reports whether the calling goroutine is running a task
// handed to an executor by any Dispatcher: whether drainMarked is on its
// stack. It costs a stack walk, a few microseconds; it is meant for rare
// calls such as a Stop that must not wait for the task calling it. A
// goroutine that a task started is not recognised.
func CalledFromTask() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Entry == drainEntry {
			return true
		}
		if !more {
			return false
		}
	}
}
