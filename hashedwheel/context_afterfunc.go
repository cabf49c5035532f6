package hashedwheel

import (
	"context"
	"sync"
)

// contextExtras is the part of a wheelContext few need, made on first
// need: derived contexts' functions, the watch that calls them (in one
// goroutine) when the parent cancels, and the timer Stop moved the
// deadline to. The CancelFunc and the deadline call them before returning.
type contextExtras struct {
	runMu sync.Mutex // held while the functions are called, for a second end to wait

	mu    sync.Mutex
	ran   bool            // the functions were taken; later ones run at once
	slots []afterFuncSlot // nil f where free
	free  []int32
	watch func() bool // stops the watch
	moved func() bool // stops the deadline's timer after Stop

	firstSlots [2]afterFuncSlot // room for the first registrations
	firstFree  [2]int32
}

// afterFuncSlot is one registration; gen changes as it is freed, lest a
// stale stop remove a later one.
type afterFuncSlot struct {
	f   func()
	gen uint32
}

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

// AfterFunc arranges to call f once the context is done, as
// context.AfterFunc does; the context package calls it to join derived
// contexts. f runs on the goroutine that ends the context by its
// CancelFunc or deadline, on one goroutine when the parent cancels it, or
// on its own if the context is done already. f must not call the
// CancelFunc.
func (c *wheelContext) AfterFunc(f func()) (stop func() bool) {
	x := c.loadExtras()
	x.mu.Lock()
	// Done already: the caller holds a lock of the registering context, so
	// f runs on another goroutine.
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

// run calls the registered functions once; a second call waits for the
// first.
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

// stopWatch stops the watch, so that an end starts no goroutine.
func (x *contextExtras) stopWatch() {
	x.mu.Lock()
	watch := x.watch
	x.mu.Unlock()
	if watch != nil {
		watch()
	}
}

func (x *contextExtras) stopMoved() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.moved != nil {
		x.moved()
		x.moved = nil
	}
}

// parentCancelled is the watch's function: the inner context is done.
func (c *wheelContext) parentCancelled() {
	c.timeout.Cancel()
	x := c.extras.Load() // made before the watch
	x.stopMoved()
	x.run()
}
