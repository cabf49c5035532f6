// Package dispatch decides which due task starts when, between a timer's
// worker and its executor: tasks that come due together start together, a
// slow task delaying no other, up to the executor's size. The hashedwheel
// timer and the benchmark contenders built on the same engine share it, so
// that they differ only in how they find what is due.
//
// A dispatch is one list of due tasks and a claim cursor, drained by drain
// functions running on the executor: each claims the next tasks, runs
// them, and claims again until none is left, then steals, one at a time,
// the tasks other drain functions claimed and have not started. The
// dispatcher bounds its drain functions across all its lists (slot.go):
// at most Parallelism, the executor's size, are handed over and not
// returned, so the executor never needs a queue of its own. A drain
// function that exhausts its list goes on with the oldest list waiting for
// drainers before it returns; a list beyond the bound waits in that queue,
// costing nothing, until one does.
//
// A dispatch starts a few drain functions, twice as many as the machine
// has processors, which is enough for short tasks. Once they have all
// started and tasks wait, the list watches itself on a runtime timer,
// every GrowInterval: while its drain functions are held by slow tasks it
// asks in one step for a drain function for every slow task it expects, up
// to the executor's size, so that slow tasks start within milliseconds
// whatever their number. The watch runs on no goroutine of the caller's,
// so a dispatching goroutine held up, or a clock.Fake standing still,
// delays no growth; and it is armed only while growing can help, so a
// dispatch waiting for a slot costs nothing until one frees up. A drain
// function claims one task at a time while tasks take long, and doubles
// its claim, up to maxClaim, while they are short, so that a storm of
// short tasks does not pay a contended atomic operation per task; what it
// claimed and has not started others may steal, so a slow task holds up no
// task claimed with it.
package dispatch

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
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
	// Parallelism is the most drain functions the dispatcher hands to the
	// executor that have not returned, across all its dispatches: the
	// executor's size. 0 means SizeOf(Executor).
	Parallelism int
	// Refused is called, on the goroutine that hands a drain function to
	// the executor (the dispatching goroutine, a list's watch, or one
	// taking over from a task or an Execute that called runtime.Goexit),
	// when the executor refuses it or panics in Execute; the function then
	// runs on a goroutine of its own, still counted in Parallelism, so
	// that no task is lost. It must be safe for concurrent use.
	Refused func(err error)
	// After calls f on a goroutine of its own once d has passed; a list
	// watches its drain functions with it. Nil means time.AfterFunc, on
	// the runtime's clock whatever clock the caller keeps, so that growth
	// never waits for a fake clock to move. Tests give their own, to fire
	// the watch by hand.
	After func(d time.Duration, f func())
	// Started and Finished, if set, are told of the tasks dispatched and
	// of those that returned, n at a time (clockwork.WorkTracker).
	Started, Finished func(n int)
}

// DefaultParallelism is the size of an executor that states none: of one
// without a Cap method, and of the pool a timer makes for itself.
const DefaultParallelism = 1024

// SizeOf returns how many tasks e runs at once: what its Cap method
// returns, if it has one and that is positive, else DefaultParallelism.
func SizeOf(e Executor) int {
	if c, ok := e.(interface{ Cap() int }); ok && c.Cap() > 0 {
		return c.Cap()
	}
	return DefaultParallelism
}

// maxKeptTasks bounds the capacity of the lists a dispatcher keeps for
// reuse, so that a storm's worth of pointers is not held once it has run.
const maxKeptTasks = 1 << 14

// maxKeptLists bounds how many emptied lists a dispatcher keeps for reuse.
const maxKeptLists = 2

// maxClaim bounds how many tasks a drain function claims at once.
const maxClaim = 64

// shortTask is how long a task may take, on average over a claim, for the
// next claim to double.
const shortTask = 20 * time.Microsecond

// yieldEvery is how long a drain function runs tasks before it yields its
// processor. A processor runs its due runtime timers only when it
// schedules, so drain functions that run without a break on every
// processor would hold up the timers, the worker's next tick among them
// (golang/go#38860).
const yieldEvery = 100 * time.Microsecond

// startDrainersPerCPU is how many drain functions per processor a dispatch
// starts with.
const startDrainersPerCPU = 2

// GrowInterval is how often a list whose tasks wait for a drain function
// checks whether its drain functions are held by slow tasks.
const GrowInterval = 250 * time.Microsecond

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

	// The bound (slot.go).
	slotsMu            sync.Mutex
	held               int      // slots granted and not given back: at most Parallelism
	idleSlots          *slot[T] // slots made and not held, linked
	waitHead, waitTail *list[T] // the lists waiting for drainers, oldest first

	// The dispatching goroutine's: the tasks of an inline dispatch, of
	// which inline[inlineNext:] have yet to run.
	inline     []T
	inlineNext int
}

// New returns a dispatcher configured by cfg.
func New[T any](cfg Config[T]) *Dispatcher[T] {
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = SizeOf(cfg.Executor)
	}
	if cfg.Refused == nil {
		cfg.Refused = func(error) {}
	}
	if cfg.After == nil {
		cfg.After = afterFunc
	}
	return &Dispatcher[T]{cfg: cfg, idle: make(chan struct{})}
}

// Inline reports whether tasks run on the dispatching goroutine.
func (d *Dispatcher[T]) Inline() bool { return d.cfg.Executor == nil }

// Dispatch runs tasks: inline, in order, before it returns; or on the
// executor, started together up to Parallelism at a time. It copies the
// tasks, into a list recycled from an earlier dispatch when one is free,
// and clears the slice, which the caller may reuse at once: a dispatch
// costs one small allocation whatever its size.
func (d *Dispatcher[T]) Dispatch(tasks []T) {
	if len(tasks) == 0 {
		return
	}
	d.inflight.Add(int64(len(tasks)))
	if d.cfg.Started != nil {
		d.cfg.Started(len(tasks))
	}
	if d.Inline() {
		d.inline, d.inlineNext = tasks, 0
		d.RunInline()
		return
	}
	for len(tasks) > 0 {
		n := min(len(tasks), maxListLen)
		d.dispatchList(tasks[:n])
		tasks = tasks[n:]
	}
}

// RunInline runs, in order, the tasks of an inline dispatch that have not
// run yet: Dispatch calls it, and so must the goroutine that takes over
// from a dispatching goroutine that a task ended with runtime.Goexit.
func (d *Dispatcher[T]) RunInline() {
	ran := 0
	defer func() { d.finish(int64(ran)) }() // a task that calls runtime.Goexit has finished too
	for d.inlineNext < len(d.inline) {
		i := d.inlineNext
		d.inlineNext++
		ran++
		t := d.inline[i]
		var zero T
		d.inline[i] = zero
		d.cfg.Run(t)
	}
	d.inline, d.inlineNext = nil, 0
}

// dispatchList hands tasks, at most maxListLen, to the executor as one
// list.
func (d *Dispatcher[T]) dispatchList(tasks []T) {
	// A list is never reused, only its slice: a drain function that comes
	// to it late finds the cursor at the end.
	l := &list[T]{d: d, tasks: append(d.spare(len(tasks)), tasks...)}
	clear(tasks)
	l.start(min(len(tasks), d.cfg.Parallelism, startDrainersPerCPU*runtime.GOMAXPROCS(0)))
}

// afterFunc is Config.After's default: time.AfterFunc.
func afterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

// spare returns an empty slice with room for n tasks: a recycled one if
// one is large enough.
func (d *Dispatcher[T]) spare(n int) []T {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, s := range d.free {
		if cap(s) >= n {
			last := len(d.free) - 1
			d.free[i], d.free[last] = d.free[last], nil
			d.free = d.free[:last]
			return s
		}
	}
	return make([]T, 0, n)
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
// closes once every dispatched task has returned and every drain function
// has given its slot back.
func (d *Dispatcher[T]) Close() {
	d.closed.Store(true)
	d.signalIdleIfDone()
}

// Idle returns a channel that is closed once Close has been called, every
// dispatched task has returned and every drain function handed to the
// executor has returned: after it, the dispatcher calls Execute no more,
// so the executor may be released.
func (d *Dispatcher[T]) Idle() <-chan struct{} { return d.idle }

// finish counts n tasks that returned.
func (d *Dispatcher[T]) finish(n int64) {
	if d.cfg.Finished != nil {
		d.cfg.Finished(int(n))
	}
	// The decrement comes before the load of closed, and Close stores
	// closed before it loads the count: one of the two sees the other.
	if d.inflight.Add(-n) == 0 && d.closed.Load() {
		d.signalIdleIfDone()
	}
}

// signalIdleIfDone closes idle if the dispatcher is closed, no task is in
// flight and no slot is held. A drain function gives its slot back (next)
// after its tasks finished, under slotsMu, which this takes: whichever of
// the last give-back, the last finish and Close comes last sees the others.
func (d *Dispatcher[T]) signalIdleIfDone() {
	d.slotsMu.Lock()
	done := d.doneLocked()
	d.slotsMu.Unlock()
	if done {
		d.signalIdle()
	}
}

// doneLocked reports whether the dispatcher is closed, no task is in
// flight and no slot is held. The caller holds slotsMu.
func (d *Dispatcher[T]) doneLocked() bool {
	return d.held == 0 && d.closed.Load() && d.inflight.Load() == 0
}

func (d *Dispatcher[T]) signalIdle() { d.idleOnce.Do(func() { close(d.idle) }) }
