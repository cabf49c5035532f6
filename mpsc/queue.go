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
// per chunkSize pushes; 128 keeps an idle queue at two small chunks while
// making the allocation cost per push negligible.
const chunkSize = 128

// closedBit is set in the producer index by Close; a producer whose claimed
// index carries it knows the queue was closed before its push.
const closedBit = 1 << 63

// notClosed marks closedAt before Close has recorded the final count.
const notClosed = ^uint64(0)

// chunk is a fixed array of slots covering indexes [base, base+chunkSize).
// Chunks are linked forward as the producer index grows and are never
// reused, so a producer holding a stale chunk pointer can always walk
// forward from it.
type chunk[T any] struct {
	base  uint64
	next  atomic.Pointer[chunk[T]]
	slots [chunkSize]atomic.Pointer[T] // nil until its producer stores it
}

// Queue is an unbounded MPSC FIFO queue. The zero value is not usable; call
// New.
//
// Push costs one atomic add and one atomic store, and one chunk allocation
// (8 bytes a slot) per chunkSize pushes. A producer never waits for the
// consumer. It waits for another producer only in one case: when it crosses
// into a chunk whose allocation was claimed by a producer that was
// suspended before linking it, which is a window of a few instructions.
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
	tailChunk atomic.Pointer[chunk[T]] // a chunk at or before the one holding tail
	closedAt  atomic.Uint64            // pushes accepted before Close, or notClosed

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
	// in a later chunk, never an earlier one.
	c := q.tailChunk.Load()
	t := q.tail.Add(1) - 1
	if t&closedBit != 0 {
		return 0, false
	}
	for t >= c.base+chunkSize {
		c = q.nextChunk(c)
	}
	off := t - c.base
	if off == 0 {
		// The producer of a chunk's first slot links the following chunk,
		// so it is usually in place long before anyone needs it.
		c.next.Store(&chunk[T]{base: c.base + chunkSize})
	}
	c.slots[off].Store(v)
	return t, true
}

// nextChunk returns the chunk after c, waiting for it to be linked, and
// moves tailChunk forward past c.
func (q *Queue[T]) nextChunk(c *chunk[T]) *chunk[T] {
	n := c.next.Load()
	for n == nil {
		runtime.Gosched()
		n = c.next.Load()
	}
	q.tailChunk.CompareAndSwap(c, n)
	return n
}

// Pop removes and returns the value at the head of the queue. It returns
// false when the queue is empty or when the next value's Push has claimed
// its place but not finished writing it; a later Pop returns it. Only the
// consumer may call Pop.
func (q *Queue[T]) Pop() (*T, bool) {
	c := q.headChunk
	off := q.head - c.base
	if off == chunkSize {
		n := c.next.Load()
		if n == nil {
			return nil, false
		}
		q.headChunk, c, off = n, n, 0
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
