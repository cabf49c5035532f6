package hierarchical

import "container/heap"

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

// Len, Less, Swap, Push and Pop make delayQueue a
// container/heap.Interface; Swap keeps each bucket's index.

func (q *delayQueue) Len() int { return len(q.items) }

func (q *delayQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	return a.due < b.due || a.due == b.due && a.level.index < b.level.index
}

func (q *delayQueue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].index = i
	q.items[j].index = j
}

func (q *delayQueue) Push(x any) {
	b := x.(*bucket)
	b.index = len(q.items)
	q.items = append(q.items, b)
}

func (q *delayQueue) Pop() any {
	last := len(q.items) - 1
	b := q.items[last]
	q.items[last] = nil
	q.items = q.items[:last]
	b.index = -1
	return b
}

// peek returns the bucket due first, or nil.
func (q *delayQueue) peek() *bucket {
	if len(q.items) == 0 {
		return nil
	}
	return q.items[0]
}

// push queues b, which must not be queued.
func (q *delayQueue) push(b *bucket) { heap.Push(q, b) }

// pop removes and returns the bucket due first; the queue must not be
// empty.
func (q *delayQueue) pop() *bucket { return heap.Pop(q).(*bucket) }

// clear empties the queue.
func (q *delayQueue) clear() {
	for _, b := range q.items {
		b.index = -1
	}
	clear(q.items)
	q.items = q.items[:0]
}
