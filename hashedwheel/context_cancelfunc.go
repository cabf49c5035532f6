package hashedwheel

import (
	"context"
	"unsafe"
)

// A wheel context is its own CancelFunc, which spares WithTimeout one
// allocation in four. A Go func value points at a closure: a word holding
// the code to run, then what the code captured. The closure of the method
// value c.cancel is the code of c.cancel's wrapper, then c; a wheelContext
// begins with the same two words, cancelCode and self, so a func value
// pointing at it runs c.cancel as the method value would.
//
// cancelCode is that wrapper's code, read once from a method value made
// here; it is zero if the method value does not hold its receiver as the
// second word, and then cancelFunc returns the method value itself.
var cancelCode = func() uintptr {
	probe := new(wheelContext)
	f := probe.cancel
	closure := (*[2]uintptr)(*(*unsafe.Pointer)(unsafe.Pointer(&f)))
	if closure[1] != uintptr(unsafe.Pointer(probe)) {
		return 0
	}
	return closure[0]
}()

// cancelFunc returns the CancelFunc of c: c itself, seen as the closure of
// c.cancel.
func (c *wheelContext) cancelFunc() context.CancelFunc {
	if cancelCode == 0 {
		return c.cancel
	}
	c.cancelCode, c.self = cancelCode, c
	closure := unsafe.Pointer(c)
	return *(*context.CancelFunc)(unsafe.Pointer(&closure))
}
