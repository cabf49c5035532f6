package hashedwheel

import (
	"context"
	"sync"
)

// contextExtras is the part of a wheelContext that few contexts need,
// made on first need: the functions by which derived contexts joined it,
// the watch that calls them when the parent cancels it, and the runtime
// timer Stop moved its deadline to.
//
// The context package cancels no context synchronously through code of
// ours: when the parent is cancelled, the inner context is, and the watch
// (context.AfterFunc on the inner context) calls the functions in a
// goroutine, one per wheel context, not one per derived context. The
// CancelFunc and the deadline call them themselves, before they return.
type contextExtras struct {
	// runMu is held while the functions are called, so that an end that
	// finds them taken returns only once they have all returned, as a
	// second cancel of a context package's context waits for the first.
	runMu sync.Mutex

	mu    sync.Mutex
	ran   bool            // the functions were taken to be called; later ones run at once
	slots []afterFuncSlot // registered functions; nil f where free
	free  []int32         // indexes of free slots
	watch func() bool     // stops the watch; nil until the first registration
	moved func() bool     // stops the deadline's runtime timer (or clock.Fake function) after Stop

	// Room for the first registrations, as most contexts have a child or
	// two, so that they cost no allocation of their own.
	firstSlots [2]afterFuncSlot
	firstFree  [2]int32
}

// afterFuncSlot is one registration. gen changes each time the slot is
// freed, so that a stale stop function cannot remove a later registration.
type afterFuncSlot struct {
	f   func()
	gen uint32
}

// loadExtras returns the context's extras, making them if needed.
func (c *wheelContext) loadExtras() *contextExtras {
	if x := c.extras.Load(); x != nil {
		return x
	}
	x := &contextExtras{}
	x.slots, x.free = x.firstSlots[:0], x.firstFree[:0]
	if c.extras.CompareAndSwap(nil, x) {
		return x
	}
	return c.extras.Load()
}

// AfterFunc arranges to call f once the context is done, and returns a
// function that stops the call, as context.AfterFunc does; the context
// package calls it to join derived contexts. f is called on the goroutine
// that ends the context by its CancelFunc or its deadline, before that
// returns; on one goroutine shared by the context's registrations when
// the parent cancels it; and on a goroutine of its own if the context is
// done already. f must not call the context's CancelFunc.
func (c *wheelContext) AfterFunc(f func()) (stop func() bool) {
	x := c.loadExtras()
	x.mu.Lock()
	// A context ended after registrations were taken, or ended before the
	// extras were made (its end did not find them), runs f at once. The
	// context package holds a lock of the registering context here: f
	// cannot run on this goroutine.
	if x.ran || c.inner.Err() != nil {
		x.mu.Unlock()
		go f()
		return stoppedAlready
	}
	if x.watch == nil {
		x.watch = context.AfterFunc(c.inner, c.parentCancelled)
	}
	var i int32
	if n := len(x.free); n > 0 {
		i, x.free = x.free[n-1], x.free[:n-1]
	} else {
		i = int32(len(x.slots))
		x.slots = append(x.slots, afterFuncSlot{})
	}
	x.slots[i].f = f
	gen := x.slots[i].gen
	x.mu.Unlock()
	return func() bool { return x.unregister(i, gen) }
}

// stoppedAlready is the stop function of a call already started.
func stoppedAlready() bool { return false }

// unregister stops the call of registration i, made at generation gen, and
// reports whether it did.
func (x *contextExtras) unregister(i int32, gen uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ran || x.slots[i].gen != gen || x.slots[i].f == nil {
		return false
	}
	x.slots[i] = afterFuncSlot{gen: gen + 1}
	x.free = append(x.free, i)
	return true
}

// run calls the registered functions, once; a second call waits until the
// first has called them all.
func (x *contextExtras) run() {
	x.runMu.Lock()
	defer x.runMu.Unlock()
	x.mu.Lock()
	x.ran = true
	slots := x.slots
	x.slots, x.free = nil, nil
	x.mu.Unlock()
	for _, s := range slots {
		if s.f != nil {
			s.f()
		}
	}
}

// stopWatch stops the watch, so that an end by the CancelFunc or the
// deadline starts no goroutine.
func (x *contextExtras) stopWatch() {
	x.mu.Lock()
	watch := x.watch
	x.mu.Unlock()
	if watch != nil {
		watch()
	}
}

// stopMoved stops the runtime timer Stop moved the deadline to, if any.
func (x *contextExtras) stopMoved() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.moved != nil {
		x.moved()
		x.moved = nil
	}
}

// parentCancelled is the watch's function: the inner context is done, by
// the parent or by an end that the watch was not stopped in time for. The
// context is done: its timeout and runtime timer are released, and the
// derived contexts told.
func (c *wheelContext) parentCancelled() {
	c.timeout.Cancel()
	x := c.extras.Load() // made before the watch
	x.stopMoved()
	x.run()
}
