package minheap

import (
	stdheap "container/heap"
	"math"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/engine"
)

// entry is a timeout as the heap sees it.
type entry = engine.Entry[link]

// link is the heap's bookkeeping in each entry.
type link struct {
	index int // position in the heap; -1 once removed
}

// shrinkBelow is the capacity under which the heap's array is never
// shrunk: reallocating small arrays buys nothing.
const shrinkBelow = 1024

// heap is a binary min-heap of entries by deadline: the engine.Structure of
// a Timer.
type heap struct {
	items []*entry
}

// Len, Less, Swap, Push and Pop make heap a container/heap.Interface;
// Swap keeps each entry's index, so that Remove finds it in O(1).

func (h *heap) Len() int           { return len(h.items) }
func (h *heap) Less(i, j int) bool { return h.items[i].When < h.items[j].When }

func (h *heap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].Link.index = i
	h.items[j].Link.index = j
}

func (h *heap) Push(x any) {
	e := x.(*entry)
	e.Link.index = len(h.items)
	h.items = append(h.items, e)
}

func (h *heap) Pop() any {
	last := len(h.items) - 1
	e := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	e.Link.index = -1
	h.shrink()
	return e
}

// Insert pushes e in O(log n).
func (h *heap) Insert(e *entry, _ int64) { stdheap.Push(h, e) }

// Remove deletes e, if it is still in the heap, in O(log n).
func (h *heap) Remove(e *entry) {
	if i := e.Link.index; i >= 0 {
		stdheap.Remove(h, i)
	}
}

// Expire pops every entry whose deadline has been reached, claims it and
// appends it to due; cancelled ones are dropped.
func (h *heap) Expire(now int64, due []*entry) []*entry {
	for len(h.items) > 0 && h.items[0].When <= now {
		e := stdheap.Pop(h).(*entry)
		if e.Claim() {
			due = append(due, e)
		}
	}
	return due
}

// Next returns the earliest deadline, or math.MaxInt64 if the heap is
// empty.
func (h *heap) Next() int64 {
	if len(h.items) == 0 {
		return math.MaxInt64
	}
	return h.items[0].When
}

// Clear removes every entry and calls f for each.
func (h *heap) Clear(f func(*entry)) {
	for _, e := range h.items {
		e.Link.index = -1
		f(e)
	}
	h.items = nil
}

// shrink reallocates the array once it is mostly empty, so that a burst of
// timeouts does not pin its peak memory forever.
func (h *heap) shrink() {
	if c := cap(h.items); c > shrinkBelow && len(h.items) < c/4 {
		h.items = append(make([]*entry, 0, c/2), h.items...)
	}
}
