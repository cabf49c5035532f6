// Package goid identifies the calling goroutine. It is slow (it formats a
// stack header) and meant for rare paths only, such as a Stop that must
// know whether it runs on the worker goroutine.
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

// Bubble returns the id of the testing/synctest bubble the calling
// goroutine runs in, read from its stack header ("goroutine 7 [running,
// synctest bubble 1]:"), or 0 outside a bubble or where the runtime does
// not write it there.
func Bubble() uint64 {
	var buf [128]byte
	b := buf[:runtime.Stack(buf[:], false)]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	const mark = "synctest bubble "
	i := bytes.Index(b, []byte(mark))
	if i < 0 {
		return 0
	}
	b = b[i+len(mark):]
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	id, err := strconv.ParseUint(string(b[:n]), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
