package dispatch

import (
	"fmt"
	"sync/atomic"
)

// The bound. A dispatcher holds Parallelism slots, across all its lists: a
// slot is held from the moment a drain function is granted it until that
// drain function, having found no list that waits for a drainer, gives it
// back and returns. A drain function that exhausts its list goes on, before
// it returns, with the oldest list waiting for drainers (the queue), so a
// list beyond the bound waits there with no Execute call and no goroutine
// until a slot frees up, and the executor is never handed more drain
// functions at once than Parallelism. Invariant: the queue holds a list
// only while every slot is held, so a list granted a slot overtakes none
// that waits.

// slot is a place among Parallelism: the drain function handed to the
// executor for it runs lists, one after another, until none waits.
type slot[T any] struct {
	d     *Dispatcher[T]
	drain func()      // drainMarked(s), made once: a closure allocates
	armed atomic.Bool // handed to the executor and not yet run; the run that clears it is the slot's drain function
	l     *list[T]    // the list its next drain function starts with; set before the slot is handed over
	link  *slot[T]    // the next idle slot, or the next of a grant
}

// owner returns the address of the slot's dispatcher (see marker.go).
func (s *slot[T]) owner() uintptr { return s.d.address() }

// execute hands the slot's drain function, for s.l, to the executor; one
// it refuses, or panics on, runs on a goroutine of its own, still holding
// the slot.
func (s *slot[T]) execute() {
	s.armed.Store(true)
	if err := safeExecute(s.d.cfg.Executor, s.drain); err != nil {
		s.d.cfg.Refused(err)
		go s.drain()
	}
}

// safeExecute hands f to e, turning a panic into an error. An Execute that
// calls runtime.Goexit ends the calling goroutine: f then runs on a
// goroutine of its own, so that no task is lost.
func safeExecute(e Executor, f func()) (err error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			err = fmt.Errorf("executor panicked: %v", r)
			return
		}
		go f()
	}()
	err = e.Execute(f)
	returned = true
	return err
}

// start counts n more drain functions for l and hands the executor one for
// each slot free; l waits in the queue for the others.
func (l *list[T]) start(n int) {
	if n > 0 {
		l.d.handOut(l.d.grant(l, n))
	}
}

// grant counts n more drain functions for l, before any of them starts,
// so that the last to start a task sees them all, and grants it a slot for
// each while slots are free: it returns them, linked. l waits in the queue
// for the rest.
func (d *Dispatcher[T]) grant(l *list[T], n int) *slot[T] {
	d.slotsMu.Lock()
	defer d.slotsMu.Unlock()
	l.drainers.Add(int64(n))
	granted := min(n, d.cfg.Parallelism-d.held)
	d.held += granted
	if n > granted {
		l.wanted += n - granted
		if !l.queued {
			l.queued = true
			if d.waitTail == nil {
				d.waitHead = l
			} else {
				d.waitTail.waitNext = l
			}
			d.waitTail = l
		}
	}
	var first *slot[T]
	for range granted {
		s := d.idleSlots
		if s == nil {
			s = &slot[T]{d: d}
			s.drain = func() { drainMarked(s) }
		} else {
			d.idleSlots = s.link
		}
		s.l, s.link = l, first
		first = s
	}
	return first
}

// handOut hands the executor the drain functions of the slots linked from
// s. An Execute that ends the calling goroutine with runtime.Goexit (the
// function it was given then runs on a goroutine of its own) leaves the
// rest to a goroutine of their own: every slot granted is handed over.
func (d *Dispatcher[T]) handOut(s *slot[T]) {
	var rest *slot[T]
	returned := false
	defer func() {
		if !returned && rest != nil {
			go d.handOut(rest)
		}
	}()
	for ; s != nil; s = rest {
		rest, s.link = s.link, nil
		s.execute()
	}
	returned = true
}

// next returns the list that the drain function of s, having exhausted
// its own, goes on with: the oldest that waits for a drainer and has a task
// left to start. With none, it gives the slot back and returns nil.
func (d *Dispatcher[T]) next(s *slot[T]) *list[T] {
	d.slotsMu.Lock()
	defer d.slotsMu.Unlock()
	for l := d.waitHead; l != nil; l = d.waitHead {
		if l.unstarted() > 0 {
			if l.wanted--; l.wanted == 0 {
				d.dequeue()
			}
			return l
		}
		d.dequeue() // every task has started: a drain function would find nothing
	}
	d.held--
	s.link, d.idleSlots = d.idleSlots, s
	if d.doneLocked() {
		d.signalIdle() // the last drain function of a closed dispatcher
	}
	return nil
}

// dequeue takes the oldest list out of the queue. The caller holds
// slotsMu.
func (d *Dispatcher[T]) dequeue() {
	l := d.waitHead
	d.waitHead, l.waitNext = l.waitNext, nil
	if d.waitHead == nil {
		d.waitTail = nil
	}
	l.queued, l.wanted = false, 0
}
