package hashedwheel

// bucket is one slot of the wheel: a doubly-linked list of timeouts, in
// the order they were added. Only the worker goroutine touches it.
type bucket struct {
	head, tail *timeout
}

// add appends t.
func (b *bucket) add(t *timeout) {
	t.prev = b.tail
	t.next = nil
	if b.tail == nil {
		b.head = t
	} else {
		b.tail.next = t
	}
	b.tail = t
}

// remove unlinks t, which must be linked in b, and returns the timeout that
// followed it.
func (b *bucket) remove(t *timeout) *timeout {
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
	return next
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
}
