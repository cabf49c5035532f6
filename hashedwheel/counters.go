package hashedwheel

import (
	"sync/atomic"
	"unsafe"
)

// counters are the timer's statistics. The worker writes most of them;
// producers write the rejections, Cancel and Reset their own counts.
type counters struct {
	expired          atomic.Uint64
	returnedByStop   atomic.Uint64
	cancelled        stripedCounter // added to by every Cancel that succeeds, on any core
	periodicRuns     atomic.Uint64
	periodicSkipped  atomic.Uint64
	scheduleErrors   atomic.Uint64
	rejectedFull     atomic.Uint64
	rejectedStopped  atomic.Uint64
	executorFailures atomic.Uint64
	contextFallbacks atomic.Uint64
	chanFallbacks    atomic.Uint64
	taskPanics       atomic.Uint64
	hookPanics       atomic.Uint64
	goexits          atomic.Uint64
	ticks            atomic.Uint64
	maxTickLag       atomic.Int64
	resets           stripedCounter // added to by every Reset, on any core
	resetsDuringRun  atomic.Uint64  // Resets that found a periodic run in progress
}

// counterStripes is the number of stripes of a stripedCounter.
const (
	counterStripesLog2 = 6
	counterStripes     = 1 << counterStripesLog2
)

// stripedCounter is a counter that goroutines on many cores add to at once:
// each adds to a stripe chosen by the address of its own stack, so that two
// goroutines seldom write the same cache line.
type stripedCounter struct {
	stripes [counterStripes]struct {
		n atomic.Uint64
		_ [2*cacheLine - 8]byte // processors fetch lines in adjacent pairs
	}
}

// cacheLine is the size of a cache line on the processors Go runs on most.
const cacheLine = 64

// add counts n.
func (c *stripedCounter) add(n uint64) {
	c.stripes[stackStripe()].n.Add(n)
}

// stackStripe returns a stripe for the calling goroutine: a hash of where
// its stack is. Goroutines' stacks lie apart, and a goroutine's stays put
// unless it grows, so the stripe is stable enough and costs no lookup.
func stackStripe() uintptr {
	var here byte
	return (uintptr(unsafe.Pointer(&here)) >> 10 * 0x9e3779b97f4a7c15) >> (64 - counterStripesLog2)
}

// load returns the count.
func (c *stripedCounter) load() uint64 {
	var n uint64
	for i := range c.stripes {
		n += c.stripes[i].n.Load()
	}
	return n
}

// countCancelled counts n cancellations and releases their places under
// the pending limit, in that order, so that a snapshot never finds more
// pending timeouts than the limit. A Cancel that succeeds counts its own:
// its place is free when it returns.
func (h *HashedWheelTimer) countCancelled(n int) {
	h.counters.cancelled.add(uint64(n))
	if h.maxPending > 0 {
		h.admitted.Add(-int64(n))
	}
}
