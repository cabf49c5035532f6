package hierarchical

import "github.com/wheeltimer/wheeltimer/benchmarks/internal/engine"

// entry is a timeout as the wheel sees it.
type entry = engine.Entry[link]

// link is the wheel's bookkeeping in each entry: its place in a bucket.
type link struct {
	next, prev *entry
	bucket     *bucket // nil when the entry is in no bucket
}

// bucket is one slot of one level: the entries whose deadlines fall in the
// slot's current range, as a doubly-linked list, so that Cancel unlinks in
// O(1).
type bucket struct {
	head, tail *entry
	level      *level
	vid        int64 // the range held: [vid·tick, (vid+1)·tick) of the level
	due        int64 // when the delay queue hands the bucket to the worker
	index      int   // position in the delay queue; -1 when not queued
}

// add appends e.
func (b *bucket) add(e *entry) {
	e.Link = link{prev: b.tail, bucket: b}
	if b.tail == nil {
		b.head = e
	} else {
		b.tail.Link.next = e
	}
	b.tail = e
}

// remove unlinks e, which must be linked in b.
func (b *bucket) remove(e *entry) {
	l := &e.Link
	if l.prev == nil {
		b.head = l.next
	} else {
		l.prev.Link.next = l.next
	}
	if l.next == nil {
		b.tail = l.prev
	} else {
		l.next.Link.prev = l.prev
	}
	e.Link = link{}
}

// detach empties the bucket and returns its former list; the caller walks
// it through each entry's next link, which detach leaves in place.
func (b *bucket) detach() *entry {
	head := b.head
	b.head, b.tail = nil, nil
	return head
}
