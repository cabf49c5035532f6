package dispatch

import (
	"reflect"
	"runtime"
	"unsafe"
)

// runner is what drainMarked runs: a slot, whose owner is the address of
// its Dispatcher. An interface keeps the marker a single, non-generic
// function whose frame CalledFromTask recognises.
type runner interface {
	run()
	owner() uintptr
}

// address returns the address of the dispatcher, which each of its slots
// keeps alive while it runs.
func (d *Dispatcher[T]) address() uintptr { return uintptr(unsafe.Pointer(d)) }

// drainMarked is a drain function: every task run on an executor runs
// beneath it, and beneath a chain of digit frames that spell its
// dispatcher's address, four bits a frame, least significant first, so
// that a stack walk tells which dispatcher runs the task. A goroutine has
// no cheaper identity that code on it can read back: the chain costs a
// call per digit, once per drain function, not per task.
//
//go:noinline
func drainMarked(r runner) { markDigits(r, r.owner()>>addressAlign) }

// addressAlign is the alignment, in bits, of a Dispatcher's address: the
// low bits, always zero, are not spelt.
const addressAlign = 3

// markDigits calls, for the lowest four bits of rest, the digit function
// that spells them, which calls markDigits with the rest; once nothing is
// left to spell, it runs r.
//
//go:noinline
func markDigits(r runner, rest uintptr) {
	if rest == 0 {
		r.run()
		return
	}
	next := rest >> 4
	switch rest & 15 {
	case 0:
		digit0(r, next)
	case 1:
		digit1(r, next)
	case 2:
		digit2(r, next)
	case 3:
		digit3(r, next)
	case 4:
		digit4(r, next)
	case 5:
		digit5(r, next)
	case 6:
		digit6(r, next)
	case 7:
		digit7(r, next)
	case 8:
		digit8(r, next)
	case 9:
		digit9(r, next)
	case 10:
		digit10(r, next)
	case 11:
		digit11(r, next)
	case 12:
		digit12(r, next)
	case 13:
		digit13(r, next)
	case 14:
		digit14(r, next)
	default:
		digit15(r, next)
	}
}

// The digit functions: digitN's frame spells the digit N.

//go:noinline
func digit0(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit1(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit2(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit3(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit4(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit5(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit6(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit7(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit8(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit9(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit10(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit11(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit12(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit13(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit14(r runner, rest uintptr) { markDigits(r, rest) }

//go:noinline
func digit15(r runner, rest uintptr) { markDigits(r, rest) }

// Entry addresses: of drainMarked, of markDigits, and of each digit
// function, mapped to its digit.
var (
	drainEntry = reflect.ValueOf(drainMarked).Pointer()
	markEntry  = reflect.ValueOf(markDigits).Pointer()
	digitOf    = func() map[uintptr]uintptr {
		m := make(map[uintptr]uintptr, 16)
		for i, f := range []func(runner, uintptr){
			digit0, digit1, digit2, digit3, digit4, digit5, digit6, digit7,
			digit8, digit9, digit10, digit11, digit12, digit13, digit14, digit15,
		} {
			m[reflect.ValueOf(f).Pointer()] = uintptr(i)
		}
		return m
	}()
)

// CalledFromTask reports whether the calling goroutine is running a task
// handed to an executor by any Dispatcher: whether drainMarked is on its
// stack. It costs a stack walk, a few microseconds; it is meant for rare
// calls such as a Stop that must not wait for the task calling it. A
// goroutine that a task started is not recognised.
func CalledFromTask() bool {
	found := false
	walkDrains(func(uintptr) bool {
		found = true
		return false
	})
	return found
}

// CalledFromTask reports whether the calling goroutine is running a task
// that d handed to its executor, as the package's CalledFromTask does for
// any dispatcher: a task of another dispatcher is not one of d's, unless
// it runs a drain function of d beneath it (an executor that runs what it
// is given on the caller's goroutine).
func (d *Dispatcher[T]) CalledFromTask() bool {
	self := d.address() >> addressAlign
	found := false
	walkDrains(func(owner uintptr) bool {
		found = owner == self
		return !found
	})
	return found
}

// walkDrains calls f, innermost first, with the address, shifted right by
// addressAlign, of the dispatcher of each drain function on the calling
// goroutine's stack, until f returns false.
func walkDrains(f func(owner uintptr) bool) {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(3, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	// The digits lie between the task's frames, inside, and drainMarked's,
	// outside: spell them from drainMarked inwards, least significant
	// first.
	var entries []uintptr
	frames := runtime.CallersFrames(pcs)
	for {
		frame, more := frames.Next()
		entries = append(entries, frame.Entry)
		if frame.Entry == drainEntry {
			var owner uintptr
			shift := uint(0)
			for i := len(entries) - 2; i >= 0; i-- {
				e := entries[i]
				if e == markEntry {
					continue
				}
				digit, ok := digitOf[e]
				if !ok {
					break
				}
				owner |= digit << shift
				shift += 4
			}
			if !f(owner) {
				return
			}
			entries = entries[:0]
		}
		if !more {
			return
		}
	}
}
