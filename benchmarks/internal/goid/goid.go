// Package goid identifies the calling goroutine. It is slow (it formats a
// stack header) and meant for rare paths only, such as a Stop that must know
// whether it runs on the timer's own worker goroutine.
package goid

import (
	"bytes"
	"runtime"
	"strconv"
)

// Current returns the runtime's id of the calling goroutine, or 0 if it
// cannot be read.
func Current() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	// The header reads "goroutine 123 [running]:".
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
