package minheap

import (
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
// a Timer. It sifts by hand rather than through container/heap: it is a
// measured contender, and the interface calls of container/heap made its
// schedule+cancel about 20% dearer at 1M pending.
type heap struct {
	items []*entry
}

func (h *heap) less(i, j int) bool { return h.items[i].When < h.items[j].When }

func (h *heap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].Link.index = i
	h.items[j].Link.index = j
}

// Insert pushes e in O(log n).
func (h *heap) Insert(e *entry, _ int64) {
	e.Link.index = len(h.items)
	h.items = append(h.items, e)
	h.up(e.Link.index)
}

// Remove deletes e, if it is still in the heap, in O(log n).
func (h *heap) Remove(e *entry) {
	if i := e.Link.index; i >= 0 {
		h.removeAt(i)
	}
}

// Move gives e its new deadline and sifts it into place in O(log n), as
// container/heap's Fix does.
func (h *heap) Move(e *entry, when, _ int64) {
	e.When = when
	if i := e.Link.index; i >= 0 && !h.down(i) {
		h.up(i)
	}
}

// Expire pops every entry whose deadline has been reached, claims it and
// appends it to due; cancelled ones are dropped.
func (h *heap) Expire(now int64, due []*entry) []*entry {
	for len(h.items) > 0 && h.items[0].When <= now {
		e := h.items[0]
		h.removeAt(0)
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

// removeAt deletes the entry at index i.
func (h *heap) removeAt(i int) {
	last := len(h.items) - 1
	e := h.items[i]
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
	e.Link.index = -1
	h.shrink()
}

// shrink reallocates the array once it is mostly empty, so that a burst of
// timeouts does not pin its peak memory forever.
func (h *heap) shrink() {
	if c := cap(h.items); c > shrinkBelow && len(h.items) < c/4 {
		h.items = append(make([]*entry, 0, c/2), h.items...)
	}
}

func (h *heap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts the entry at i down and reports whether it moved.
func (h *heap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && h.less(right, child) {
			child = right
		}
		if !h.less(child, i) {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
