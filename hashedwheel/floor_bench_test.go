package hashedwheel

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// The floor benchmarks measure, with no timer at all, the least that a
// schedule and cancel of this timer's shape costs the calling goroutine:
//
//   - one monotonic clock read, without which a timeout could fire early;
//   - one 64-byte timeout, which the caller keeps and the worker links;
//   - publishing it to the worker: claiming a queue index and storing the
//     pointer, both atomic, as a lock-free queue must;
//   - Cancel's compare-and-swap.
//
// They report "x-AfterFunc" as BenchmarkNewTimeoutCancel does, so that the
// ratio of the floor and the ratio of the timer can be read side by side
// from one run. What the timer measures above the floor is the cost of its
// queues and of a worker on another core reading what they hold.
//
// Two floors: "young" publishes into a small ring, so each timeout dies
// soon after it is made; "held" into a ring of heldSlots, so each stays
// reachable about as long as the wheel holds a timeout cancelled before the
// worker took it, which the garbage collector must mark meanwhile.
//
// floorStack is the floor of a NewTimeout that stays pending, for
// BenchmarkScheduleMillion's "-floor" cases.

// heldSlots is about how many cancelled timeouts the wheel holds, on
// average, between two of its default 100ms ticks at this machine's rate of
// one schedule and cancel per 80ns.
const heldSlots = 1 << 19

// floorQueue stands in for an intake queue: an index claim and a pointer
// store per push, into a ring that keeps the last len(slots) timeouts.
type floorQueue struct {
	_     cpu.CacheLinePad
	tail  atomic.Uint64
	_     cpu.CacheLinePad
	slots []atomic.Pointer[timeout]
}

func newFloorQueue(slots int) *floorQueue {
	return &floorQueue{slots: make([]atomic.Pointer[timeout], slots)}
}

func (q *floorQueue) push(t *timeout) {
	i := q.tail.Add(1)
	q.slots[i&uint64(len(q.slots)-1)].Store(t)
}

// floorTimeout reads the clock and makes a timeout of task due after
// delay, as NewTimeout does.
func floorTimeout(origin time.Time, h *HashedWheelTimer, task TimerTask, delay time.Duration) *timeout {
	now := int64(time.Since(origin))
	t := &timeout{timer: h, task: task}
	t.word.Store(withDeadline(stateQueued, now, delay))
	return t
}

// newTimeoutCancel does the four steps once, on q.
func (q *floorQueue) newTimeoutCancel(origin time.Time, h *HashedWheelTimer) {
	t := floorTimeout(origin, h, noopTask, benchDelay)
	q.push(t)
	t.Cancel()
}

// floorStack stands in for an intake stack that one producer has to
// itself: a timeout links the one below and is pushed with one
// compare-and-swap, as NewTimeout's push is when uncontended.
type floorStack struct {
	_   cpu.CacheLinePad
	top atomic.Pointer[timeout]
	_   cpu.CacheLinePad
}

// newTimeout is the floor of NewTimeout: a clock read, a 64-byte timeout
// and its push onto s.
func (s *floorStack) newTimeout(origin time.Time, h *HashedWheelTimer, task TimerTask) *timeout {
	t := floorTimeout(origin, h, task, time.Hour)
	for {
		top := s.top.Load()
		t.prev = top
		if s.top.CompareAndSwap(top, t) {
			return t
		}
	}
}

var floors = []struct {
	name  string
	slots int
}{{"young", 1 << 10}, {"held", heldSlots}}

// BenchmarkNewTimeoutCancelFloor is the floor of BenchmarkNewTimeoutCancel.
func BenchmarkNewTimeoutCancelFloor(b *testing.B) {
	for _, f := range floors {
		b.Run(f.name, func(b *testing.B) {
			q := newFloorQueue(f.slots)
			origin, h := time.Now(), new(HashedWheelTimer)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q.newTimeoutCancel(origin, h)
			}
			reportRatio(b, false)
		})
	}
}

// BenchmarkNewTimeoutCancelFloorParallel is the floor of
// BenchmarkNewTimeoutCancelParallel. Each goroutine has a queue of its own,
// so that no cache line is shared: the best any spreading of producers over
// queues can do.
func BenchmarkNewTimeoutCancelFloorParallel(b *testing.B) {
	for _, f := range floors {
		b.Run(f.name, func(b *testing.B) {
			origin, h := time.Now(), new(HashedWheelTimer)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				q := newFloorQueue(f.slots)
				for pb.Next() {
					q.newTimeoutCancel(origin, h)
				}
			})
			reportRatio(b, true)
		})
	}
}
