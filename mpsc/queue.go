// Package mpsc provides an unbounded, lock-free, multi-producer
// single-consumer FIFO queue of pointers.
//
// Any number of goroutines may Push concurrently; exactly one goroutine at a
// time, the consumer, may call Pop, Empty and Close. Values pushed by one
// goroutine are popped in the order it pushed them.
//
// The queue holds pointers (*T), not values: a slot is then one word that a
// single atomic store both fills and publishes, and nil marks a slot not yet
// filled.
package mpsc

import (
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// chunkSize is the number of slots in one chunk. A chunk is allocated once
// per chunkSize pushes, unless one the consumer left is reused; 128 keeps
// a new or idle queue at two small chunks.
const chunkSize = 128

// maxSpare is the number of chunks the consumer left that a queue keeps
// for reuse: a backlog of up to maxSpare × chunkSize values, 4096, between
// two passes of the consumer then allocates nothing once the queue has
// seen one that large, and the queue keeps at most 32 KiB of them.
const maxSpare = 32

// closedBit is set in the producer index by Close; a producer whose claimed
// index carries it knows the queue was closed before its push.
const closedBit = 1 << 63

// notClosed marks closedAt before Close has recorded the final count.
const notClosed = ^uint64(0)

// retired is the base of a chunk the consumer has left: above every index,
// so that a producer still holding the chunk sees it does not hold its
// index.
const retired = ^uint64(0)

// chunk is a fixed array of slots covering indexes [base, base+chunkSize).
// Chunks are linked forward as the producer index grows. The chunks the
// consumer leaves are kept, up to maxSpare, for the next chunks producers
// link, each with a new base: a producer holding a stale chunk pointer checks the base of
// each chunk it reaches against its index, and starts again from the
// consumer's chunk when a chunk was retired or reused under it.
type chunk[T any] struct {
	base  atomic.Uint64 // the index of slots[0], or retired
	next  atomic.Pointer[chunk[T]]
	slots [chunkSize]atomic.Pointer[T] // nil until its producer stores it
}

// Queue is an unbounded MPSC FIFO queue. The zero value is not usable; call
// New.
//
// Push costs one atomic add and one atomic store, and once per chunkSize
// pushes a chunk: one the consumer left, or, when none is kept, a new
// allocation (8 bytes a slot). The queue keeps up to maxSpare chunks the
// consumer left, so a consumer that drains a backlog of up to 4096 values
// at a time makes pushes allocate nothing once the queue has held one. A
// producer never waits for the consumer. It waits for another producer
// only in one case: when it crosses into a chunk whose allocation was
// claimed by a producer that was suspended before linking it, which is a
// window of a few instructions.
//
// Every Push writes the one shared producer index, so producers on
// different cores that push into one queue at a high rate pass that cache
// line back and forth on each push; a mutex that lets one core push a burst
// while the others wait can then move more values per second. Producers
// that push that often scale better over several queues, one per group of
// producers, drained by the same consumer.
type Queue[T any] struct {
	_ cpu.CacheLinePad

	// Producer side: written by every Push.
	tail      atomic.Uint64            // next index to claim, with closedBit once closed
	tailChunk atomic.Pointer[chunk[T]] // a chunk at or before the one holding tail, unless retired since
	closedAt  atomic.Uint64            // pushes accepted before Close, or notClosed

	_ cpu.CacheLinePad

	// Written by the consumer when it changes chunks, read by producers.
	oldest atomic.Pointer[chunk[T]]           // the consumer's chunk: at or before every unfilled slot
	spares [maxSpare]atomic.Pointer[chunk[T]] // chunks the consumer left, for producers to link; nil if none

	_ cpu.CacheLinePad

	// Consumer side: touched only by the consumer.
	head      uint64
	headChunk *chunk[T]

	_ cpu.CacheLinePad
}

// New returns an empty queue.
func New[T any]() *Queue[T] {
	c := &chunk[T]{}
	q := &Queue[T]{headChunk: c}
	q.tailChunk.Store(c)
	q.oldest.Store(c)
	q.closedAt.Store(notClosed)
	return q
}

// Push appends v to the queue and reports whether it was accepted. It
// refuses v after Close, and a nil v; a refused v is never popped. An
// accepted v also gets its index: the number of values the queue accepted
// before it, so that a producer can act on every n-th value, say to wake a
// sleeping consumer. Push is safe for concurrent use by any number of
// goroutines.
func (q *Queue[T]) Push(v *T) (index uint64, ok bool) {
	if v == nil {
		return 0, false
	}
	// Load the chunk before claiming the index: the chunk was published
	// after its base was claimed, so the index claimed below lies in it or
	// in a later chunk, never an earlier one, unless the chunk was retired
	// since, which its base shows.
	c := q.tailChunk.Load()
	t := q.tail.Add(1) - 1
	if t&closedBit != 0 {
		return 0, false
	}
	base := c.base.Load()
	if base > t || t-base >= chunkSize {
		c, base = q.chunkOf(c, t)
	}
	off := t - base
	if off == linkAt {
		// The producer of a chunk's middle slot links the following chunk,
		// so it is usually in place long before anyone needs it.
		c.next.Store(q.newChunk(base + chunkSize))
	}
	c.slots[off].Store(v)
	return t, true
}

// linkAt is the slot whose producer links the following chunk: past the
// first, so that a new queue's first pushes allocate nothing.
const linkAt = chunkSize / 2

// chunkOf returns the chunk that holds index t, claimed and not yet
// filled, and its base, walking forward from c. That chunk cannot be
// retired before slot t is filled and popped; any chunk before it can, so
// each chunk's base is checked against t, and after a retired or reused
// chunk the walk starts again from the consumer's chunk, which is never
// past t's.
func (q *Queue[T]) chunkOf(c *chunk[T], t uint64) (*chunk[T], uint64) {
	for {
		base := c.base.Load()
		if base > t { // retired, or reused for later indexes
			o := q.oldest.Load()
			q.tailChunk.CompareAndSwap(c, o) // not left on a retired chunk
			c = o
			continue
		}
		if t-base < chunkSize {
			return c, base
		}
		n := c.next.Load()
		if c.base.Load() != base {
			continue // retired while next was read: n may be of its new life
		}
		if n == nil {
			runtime.Gosched() // its producer has claimed it and will link it
			continue
		}
		q.tailChunk.CompareAndSwap(c, n)
		c = n
	}
}

// newChunk returns an empty chunk for the indexes from base: one the
// consumer left, if one is kept, or a new one.
func (q *Queue[T]) newChunk(base uint64) *chunk[T] {
	var c *chunk[T]
	for i := range q.spares {
		if q.spares[i].Load() != nil {
			if c = q.spares[i].Swap(nil); c != nil {
				break
			}
		}
	}
	if c == nil {
		c = &chunk[T]{}
	}
	c.base.Store(base)
	return c
}

// retire keeps c, which the consumer has left with every slot popped, for
// producers to link again, unless maxSpare chunks are kept already. Its
// base goes first, so that a producer still holding c that reads its next
// pointer and then the base unchanged read the next of its last life.
func (q *Queue[T]) retire(c *chunk[T]) {
	c.base.Store(retired)
	c.next.Store(nil)
	for i := range q.spares {
		if q.spares[i].Load() == nil && q.spares[i].CompareAndSwap(nil, c) {
			return
		}
	}
}

// Pop removes and returns the value at the head of the queue. It returns
// false when the queue is empty or when the next value's Push has claimed
// its place but not finished writing it; a later Pop returns it. Only the
// consumer may call Pop.
func (q *Queue[T]) Pop() (*T, bool) {
	c := q.headChunk
	off := q.head - c.base.Load()
	if off == chunkSize {
		n := c.next.Load()
		if n == nil {
			return nil, false
		}
		q.headChunk, off = n, 0
		q.oldest.Store(n) // before c is retired: a producer that finds c reused starts from n
		q.retire(c)
		c = n
	}
	v := c.slots[off].Load()
	if v == nil {
		return nil, false
	}
	// Cleared, so that the queue keeps nothing it has handed out alive; no
	// producer writes a slot once it is filled.
	c.slots[off].Store(nil)
	q.head++
	return v, true
}

// Empty reports whether every accepted push has been popped. A push that
// has claimed its place but not finished counts as not popped, so after
// Close, popping until Empty returns true drains every accepted value. Only
// the consumer may call Empty.
func (q *Queue[T]) Empty() bool {
	t := q.tail.Load()
	if t&closedBit != 0 {
		t = q.closedAt.Load()
	}
	return q.head == t
}

// Close makes every later Push fail. Pushes that returned true before it,
// or that are still in progress but claimed their place first, are still
// delivered by Pop. Only the consumer may call Close; calling it again has
// no effect.
func (q *Queue[T]) Close() {
	t := q.tail.Or(closedBit)
	if t&closedBit == 0 {
		q.closedAt.Store(t)
	}
}

// Pushed returns the number of accepted pushes so far. It is safe for
// concurrent use; while pushes are in progress the count includes those
// that have claimed their place.
func (q *Queue[T]) Pushed() uint64 {
	t := q.tail.Load()
	if t&closedBit == 0 {
		return t
	}
	if n := q.closedAt.Load(); n != notClosed {
		return n
	}
	// Close is between its two steps; failed pushes may be counted.
	return t &^ closedBit
}
