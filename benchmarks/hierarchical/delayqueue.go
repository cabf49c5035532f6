package hierarchical

// delayQueue is a binary min-heap of buckets ordered by due time, Kafka's
// DelayQueue. It holds buckets, not timeouts, so it stays as small as the
// number of armed buckets (at most levels × wheelSize) whatever the number
// of pending timeouts.
//
// Buckets due at the same instant come out lowest level first. The wheel's
// clock advance relies on it: a level-0 bucket that ends when a level-1
// bucket starts must be expired before the level-1 bucket cascades into
// level 0, or the cascade could land in its slot.
type delayQueue struct {
	items []*bucket
}

func (q *delayQueue) less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	return a.due < b.due || a.due == b.due && a.level.index < b.level.index
}

func (q *delayQueue) swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].index = i
	q.items[j].index = j
}

// peek returns the bucket due first, or nil.
func (q *delayQueue) peek() *bucket {
	if len(q.items) == 0 {
		return nil
	}
	return q.items[0]
}

// push queues b, which must not be queued.
func (q *delayQueue) push(b *bucket) {
	b.index = len(q.items)
	q.items = append(q.items, b)
	q.up(b.index)
}

// pop removes and returns the bucket due first; the queue must not be
// empty.
func (q *delayQueue) pop() *bucket {
	last := len(q.items) - 1
	q.swap(0, last)
	b := q.items[last]
	q.items[last] = nil
	q.items = q.items[:last]
	q.down(0)
	b.index = -1
	return b
}

// clear empties the queue.
func (q *delayQueue) clear() {
	for _, b := range q.items {
		b.index = -1
	}
	clear(q.items)
	q.items = q.items[:0]
}

func (q *delayQueue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

func (q *delayQueue) down(i int) {
	n := len(q.items)
	for {
		child := 2*i + 1
		if child >= n {
			return
		}
		if right := child + 1; right < n && q.less(right, child) {
			child = right
		}
		if !q.less(child, i) {
			return
		}
		q.swap(i, child)
		i = child
	}
}
