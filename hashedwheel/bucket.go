package hashedwheel

import "math"

// bucket is one slot of the wheel: a doubly-linked list of timeouts, in
// the order they were added, and a bound on when any of them is due. Only
// the worker goroutine touches it.
type bucket struct {
	head, tail *timeout
	// minDue is a tick no timeout in the bucket is due before: exact after
	// the bucket's walk, lowered by each add, left low by removals; the
	// largest tick when the bucket is empty.
	minDue int64
}

// add appends t, due at tick due.
func (b *bucket) add(t *timeout, due int64) {
	t.prev = b.tail
	t.next = nil
	if b.tail == nil {
		b.head = t
	} else {
		b.tail.next = t
	}
	b.tail = t
	b.minDue = min(b.minDue, due)
}

// remove unlinks t, which must be linked in b.
func (b *bucket) remove(t *timeout) {
	next := t.next
	if t.prev == nil {
		b.head = next
	} else {
		t.prev.next = next
	}
	if next == nil {
		b.tail = t.prev
	} else {
		next.prev = t.prev
	}
	t.next, t.prev = nil, nil
	if b.head == nil {
		b.minDue = math.MaxInt64
	}
}

// clear unlinks every timeout and calls f for each, in order.
func (b *bucket) clear(f func(*timeout)) {
	for t := b.head; t != nil; {
		next := t.next
		t.next, t.prev = nil, nil
		f(t)
		t = next
	}
	b.head, b.tail = nil, nil
	b.minDue = math.MaxInt64
}
