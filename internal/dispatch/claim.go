package dispatch

import (
	"runtime"
	"sync/atomic"
)

// claim is a drain function's reservation of consecutive tasks of its
// segment not yet started, [pos, end). Its drain function starts them one
// at a time from pos; one that finds the cursor exhausted steals them from
// end, so a slow task holds up none of the tasks claimed with it. Each
// task is started exactly once, by the one compare-and-swap of the packed
// word that moves pos past it or end before it.
type claim struct {
	word atomic.Uint64 // pos<<32 | end, or claiming while the owner reserves
	next *claim        // the claim below on the segment's stack; set before the push
	_    [64 - 16]byte // a cache line of its own: its owner writes it for every task
}

// claiming marks a claim whose owner is moving the cursor: a thief waits
// for the range it gets.
const claiming = 1 << 63

// pack puts a range in a claim's word: an index fits in 31 bits, as a
// segment of 2^31 tasks would be a tick's timeouts filling hundreds of
// GiB.
func pack(pos, end int64) uint64 { return uint64(pos)<<32 | uint64(end) }

func unpack(w uint64) (pos, end int64) { return int64(w >> 32), int64(uint32(w)) }

// set makes [pos, end) the claim's unstarted tasks.
func (c *claim) set(pos, end int64) { c.word.Store(pack(pos, end)) }

// take starts the claim's first unstarted task, for its owner, which
// claimed k; a claim of one task (k 1) has no claim object.
func (c *claim) take(k int64) (int64, bool) {
	if k == 1 {
		return 0, false
	}
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
