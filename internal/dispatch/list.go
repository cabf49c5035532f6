package dispatch

import (
	"runtime"
	"sync/atomic"
	"time"
)

// list is one dispatch: the due tasks, the cursor the drain functions
// claim them with, and the claims that some have not started yet.
type list[T any] struct {
	d        *Dispatcher[T]
	tasks    []T
	drainers atomic.Int64          // drain functions granted or waited for in the queue
	working  atomic.Int64          // drain functions that have started a task, not ended by a Goexit
	next     atomic.Int64          // index of the first unclaimed task
	claims   atomic.Pointer[claim] // every claim of more than one task, newest first
	finished atomic.Int64          // tasks that have returned
	watching atomic.Bool           // a check is armed or running (see watch.go)

	// The holder of watching's: the check, made once (a method value
	// allocates), and how many tasks had started when it was armed.
	check          func()
	startedAtCheck int64

	// Guarded by the dispatcher's slotsMu (see slot.go).
	queued   bool     // in the queue of lists waiting for drainers
	wanted   int      // drain functions it waits for there
	waitNext *list[T] // the next list in the queue
}

// unstarted returns how many tasks of the list have not started: those
// unclaimed and those claimed but not started.
func (l *list[T]) unstarted() int64 {
	n := max(int64(len(l.tasks))-l.next.Load(), 0)
	for c := l.claims.Load(); c != nil; c = c.next {
		n += c.unstarted()
	}
	return n
}

// run is the slot's drain function: it drains its list, then each list
// it takes from the queue, until none waits. A second run for one
// hand-over, by an executor that runs a function twice, finds the slot
// unarmed and does nothing.
func (s *slot[T]) run() {
	if !s.armed.CompareAndSwap(true, false) {
		return
	}
	l := s.l
	s.l = nil // kept, a list drained long ago would stay alive with its tasks
	for ; l != nil; l = s.d.next(s) {
		l.run(s)
	}
}

// run runs tasks, for the drain function of s, until none is left to
// start: it claims them from the cursor, one at a time, twice as many each
// time the last claim's tasks were short; then it steals the tasks that
// other drain functions claimed and have not started, so that a slow task
// holds up no task claimed with it. It yields its processor every
// yieldEvery. A task that calls runtime.Goexit ends the drain function:
// another one, for the same slot, takes over.
func (l *list[T]) run(s *slot[T]) {
	r := drainer[T]{l: l, s: s, began: monotonic()}
	r.yielded = r.began
	defer r.finish()
	r.claimAndRun()
	r.steal()
	r.returned = true
}

// drainer is the state of one drain function's run of a list.
type drainer[T any] struct {
	l        *list[T]
	s        *slot[T] // the slot its drain function holds
	own      *claim   // this drain function's claim, made at its first claim of several tasks
	ran      int64    // tasks run
	began    int64    // when the current claim's tasks began
	yielded  int64    // when the processor was last yielded
	returned bool     // run returned: no task called runtime.Goexit
}

// claimAndRun claims tasks from the cursor and runs them, until none is
// left to claim.
func (r *drainer[T]) claimAndRun() {
	l := r.l
	n := int64(len(l.tasks))
	k := int64(1)
	for {
		if k > 1 {
			r.ownClaim().reserving()
		}
		first := l.next.Add(k) - k
		if first >= n {
			if r.own != nil {
				r.own.set(0, 0)
			}
			return
		}
		last := min(first+k, n)
		if k > 1 {
			r.own.set(first+1, last)
		}
		ran := r.ran
		r.runTask(first)
		if k > 1 {
			for i, ok := r.own.take(); ok; i, ok = r.own.take() {
				r.runTask(i)
			}
		}
		ended := monotonic()
		if ended-r.began < int64(shortTask)*(r.ran-ran) {
			k = min(2*k, maxClaim)
		} else {
			k = 1
		}
		r.began = ended
		r.yieldEvery(ended)
	}
}

// ownClaim returns the drain function's claim, making it and pushing it on
// the list's stack the first time.
func (r *drainer[T]) ownClaim() *claim {
	if r.own == nil {
		c := new(claim)
		for {
			c.next = r.l.claims.Load()
			if r.l.claims.CompareAndSwap(c.next, c) {
				break
			}
		}
		r.own = c
	}
	return r.own
}

// steal runs, one at a time, the tasks other drain functions claimed and
// have not started, until none is left.
func (r *drainer[T]) steal() {
	for c := r.l.claims.Load(); c != nil; c = c.next {
		for i, ok := c.steal(); ok; i, ok = c.steal() {
			r.runTask(i)
			r.yieldEvery(monotonic())
		}
	}
}

// runTask runs task i, which this drain function alone has started. The
// last of the list's drain functions to start its first task arms the
// list's watch: one still waiting for a processor is held by no task.
func (r *drainer[T]) runTask(i int64) {
	if r.ran == 0 && r.l.working.Add(1) >= r.l.drainers.Load() {
		r.l.watch()
	}
	r.ran++ // counted first: a task that calls runtime.Goexit has finished too
	l := r.l
	l.d.cfg.Run(l.tasks[i])
	var zero T
	l.tasks[i] = zero // let it be collected
}

// yieldEvery yields the processor if yieldEvery has passed since it last
// did, at now.
func (r *drainer[T]) yieldEvery(now int64) {
	if now-r.yielded >= int64(yieldEvery) {
		runtime.Gosched()
		r.began = monotonic() // the time away is not the tasks'
		r.yielded = r.began
	}
}

// finish counts the tasks the drain function ran. If a task ended it with
// runtime.Goexit, a new drain function, holding the same slot, takes over
// what is left, handed to the executor so that its size holds: the
// goroutine ending may hold the executor's last place, which its executor
// hands on once it has ended, so the hand-over is made from a goroutine of
// its own, in case Execute waits for a place.
func (r *drainer[T]) finish() {
	l := r.l
	if !r.returned {
		if r.own != nil && r.own.word.Load() == claiming {
			r.own.set(0, 0)
		}
		l.working.Add(-1) // its successor, counted in drainers already, has yet to start
		r.s.l = l
		go r.s.execute()
	}
	if r.ran == 0 {
		return
	}
	// The drain function that finishes the last task recycles the slice:
	// every task has started, so no drain function reads it again.
	if l.finished.Add(r.ran) == int64(len(l.tasks)) {
		l.d.recycle(l.tasks)
	}
	l.d.finish(r.ran)
}

// origin is the reference of monotonic.
var origin = time.Now()

// monotonic returns the nanoseconds since origin, on the monotonic clock.
func monotonic() int64 { return int64(time.Since(origin)) }

// keep returns s, or nil if its capacity is too large to keep.
func keep[T any](s []T) []T {
	if cap(s) > maxKeptTasks {
		return nil
	}
	return s
}
