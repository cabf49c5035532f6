package dispatch

import (
	"reflect"
	"runtime"
)

// runner is what drainMarked runs; an interface keeps the marker a single,
// non-generic function whose frame CalledFromTask recognises.
type runner interface{ run() }

// drainMarked is a drain function: every task run on an executor runs
// beneath it.
//
//go:noinline
func drainMarked(r runner) { r.run() }

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
