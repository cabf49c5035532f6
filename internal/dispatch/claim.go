package dispatch

import (
	"runtime"
	"sync/atomic"
)

// claim is a drain function's reservation of consecutive tasks of its
// list, [pos, end), that it has not started yet. Its drain function starts
// them one at a time from pos; a drain function with nothing left to claim
// steals them from end, so that a slow task holds up none of the tasks
// claimed with it. Each task is started by the one compare-and-swap of the
// packed word that moves pos past it or end before it: exactly once.
type claim struct {
	word atomic.Uint64 // pos<<32 | end, or claiming while the owner reserves
	next *claim        // the claim below on the list's stack; set before the push
	_    [cacheLine - 16]byte
}

// cacheLine keeps each drain function's claim, written for every task it
// starts, on a cache line of its own.
const cacheLine = 64

// claiming marks a claim whose owner is reserving tasks from the cursor:
// a thief that found the cursor exhausted waits for the range it got.
const claiming = 1 << 63

// maxListLen bounds a list's length, so that an index fits in 31 bits of a
// claim's word.
const maxListLen = 1<<31 - 1

func pack(pos, end int64) uint64 { return uint64(pos)<<32 | uint64(end) }

func unpack(w uint64) (pos, end int64) { return int64(w >> 32), int64(uint32(w)) }

// reserving marks the claim as being reserved, before the owner moves the
// list's cursor.
func (c *claim) reserving() { c.word.Store(claiming) }

// set makes [pos, end) the claim's unstarted tasks.
func (c *claim) set(pos, end int64) { c.word.Store(pack(pos, end)) }

// take starts the first unstarted task of the claim, for its owner.
func (c *claim) take() (int64, bool) {
	for {
		w := c.word.Load()
		pos, end := unpack(w)
		if pos >= end {
			return 0, false
		}
		if c.word.CompareAndSwap(w, pack(pos+1, end)) {
			return pos, true
		}
	}
}

// steal starts the last unstarted task of the claim, for a thief.
func (c *claim) steal() (int64, bool) {
	for {
		w := c.word.Load()
		if w == claiming {
			runtime.Gosched() // the owner is between two instructions
			continue
		}
		pos, end := unpack(w)
		if pos >= end {
			return 0, false
		}
		if c.word.CompareAndSwap(w, pack(pos, end-1)) {
			return end - 1, true
		}
	}
}

// unstarted returns how many of the claim's tasks have not started; 0
// while its owner reserves.
func (c *claim) unstarted() int64 {
	w := c.word.Load()
	if w == claiming {
		return 0
	}
	pos, end := unpack(w)
	return max(end-pos, 0)
}
