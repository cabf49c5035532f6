package hashedwheel

import (
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/wheeltimer/wheeltimer/mpsc"
)

// shard is one pair of the queues through which producers reach the
// worker. A timeout's shard follows from its address (see shardOf), so that
// goroutines on different cores rarely write the same queue index; the
// worker drains them all.
type shard struct {
	intake  *mpsc.Queue[timeout] // new timeouts
	cancels *mpsc.Queue[timeout] // cancelled timeouts that are in a bucket
}

// shardsPerCPU spreads producers over enough queues that two running at
// once seldom collide.
const shardsPerCPU = 4

// maxShards bounds the memory of an idle timer on a large machine.
const maxShards = 64

func newShards() []shard {
	n := min(runtime.GOMAXPROCS(0)*shardsPerCPU, maxShards)
	n = 1 << bits.Len(uint(n-1)) // a power of two, for masking
	shards := make([]shard, n)
	for i := range shards {
		shards[i] = shard{intake: mpsc.New[timeout](), cancels: mpsc.New[timeout]()}
	}
	return shards
}

// shardOf returns the shard for t, chosen by the 8 KiB page that holds t.
// The runtime allocates from a page per P, so goroutines running at once on
// different Ps mostly allocate from different pages and so push to
// different shards, with no coordination and no random draw; and the
// timeouts one goroutine makes in a row share a shard, so the worker links
// them into buckets in allocation order, which keeps its bucket walks
// sequential in memory. The heap does not move objects, so the address is a
// stable key.
func (h *HashedWheelTimer) shardOf(t *timeout) *shard {
	page := uint32(uintptr(unsafe.Pointer(t)) >> pageShift)
	return &h.shards[page&h.shardMask]
}

// pageShift is log2 of the runtime's page size, 8 KiB.
const pageShift = 13

// intakeEmpty reports whether no new timeout is queued or being queued.
// Only the worker may call it.
func (h *HashedWheelTimer) intakeEmpty() bool {
	for i := range h.shards {
		if !h.shards[i].intake.Empty() {
			return false
		}
	}
	return true
}

// scheduled returns the number of timeouts accepted so far.
func (h *HashedWheelTimer) scheduled() uint64 {
	var n uint64
	for i := range h.shards {
		n += h.shards[i].intake.Pushed()
	}
	return n
}

// drain pops every value of a closed queue, waiting for pushes that had
// claimed their place before it closed.
func drain(q *mpsc.Queue[timeout], f func(*timeout)) {
	for !q.Empty() {
		if t, ok := q.Pop(); ok {
			f(t)
		} else {
			runtime.Gosched()
		}
	}
}
