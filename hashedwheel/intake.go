package hashedwheel

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/wheeltimer/wheeltimer/mpsc"
)

// shard is one of the ways by which producers reach the worker: an intake
// stack for new timeouts and a queue for the cancellations of timeouts in
// a bucket. A timeout's shard follows from its address (see shardOf), so
// that goroutines on different cores rarely write the same stack; the
// worker takes them all in.
//
// The intake is a lock-free stack threaded through the timeouts' own prev
// fields, which costs a push one compare-and-swap and no allocation. The
// worker takes the whole stack at once by swapping a fresh sentinel onto
// it, and reverses what it took through the next fields, so that each
// producer's timeouts reach the wheel in the order it made them. Every node
// carries in seq the number of timeouts pushed on the shard up to and
// including it, modulo 2³², and every sentinel the count at the time it was
// swapped in, so that the top of the stack always tells how many timeouts
// the shard has taken in: PendingTimeouts needs no counter of its own.
//
// A push onto a timeout cancelled before the worker took it links past it
// (see under), so that a timeout made and cancelled before the next one is
// made on its stack, the commonest fate of a request timeout, never
// reaches the worker. The worker counts the timeouts it did not find below
// the top as processed cancellations.
type shard struct {
	_   cpu.CacheLinePad
	top atomic.Pointer[timeout] // newest timeout, a sentinel, or closedIntake
	_   cpu.CacheLinePad

	// Written by the worker alone.
	taken   atomic.Uint64        // timeouts taken off the stack so far
	bottom  *timeout             // the sentinel swapped in by the last take
	cancels *mpsc.Queue[timeout] // cancelled timeouts that are in a bucket
}

// closedIntake is the top of every closed intake stack.
var closedIntake = new(timeout)

// shardsPerCPU spreads producers over enough stacks that two running at
// once seldom collide.
const shardsPerCPU = 4

// maxShards bounds the memory of an idle timer on a large machine.
const maxShards = 64

func newShards() []shard {
	n := min(runtime.GOMAXPROCS(0)*shardsPerCPU, maxShards)
	n = 1 << bits.Len(uint(n-1)) // a power of two, for masking
	shards := make([]shard, n)
	for i := range shards {
		s := &shards[i]
		s.bottom = new(timeout)
		s.top.Store(s.bottom)
		s.cancels = mpsc.New[timeout]()
	}
	return shards
}

// push puts t on top of the stack and returns the number of timeouts the
// shard has taken in, t included, modulo 2³². It fails once the stack is
// closed. push is safe for concurrent use.
func (s *shard) push(t *timeout) (uint32, bool) {
	for {
		top := s.top.Load()
		if top == closedIntake {
			return 0, false
		}
		// t is not yet published: these plain writes are seen by whoever
		// loads it from top, as the swap below orders them before it.
		t.prev, t.seq = s.under(top), top.seq+1
		if s.top.CompareAndSwap(top, t) {
			return t.seq, true
		}
	}
}

// under returns the node that a timeout pushed onto top links to: top
// itself, or the node below it if top is a timeout cancelled before the
// worker took it and without a Cancelled hook, which the push then unlinks.
// A timeout with a hook is left for the worker, which calls the hook.
func (s *shard) under(top *timeout) *timeout {
	if top.currentState() != stateCancelled || cancelledHookOf(top.task) != nil {
		return top
	}
	// Still on top after it was seen cancelled, top has not been taken: it
	// was cancelled while queued, so it will never be linked into a bucket,
	// which would rewrite its prev. If it was taken meanwhile, the swap in
	// push fails whatever this returns.
	if s.top.Load() != top {
		return top
	}
	return top.below()
}

// takeAll takes off the stack every timeout pushed since the last call and
// returns them, oldest first. Only the worker may call it.
func (s *shard) takeAll() takenList {
	top := s.top.Load()
	if top == s.bottom {
		return takenList{}
	}
	sentinel := new(timeout)
	for {
		sentinel.seq = top.seq
		if s.top.CompareAndSwap(top, sentinel) {
			break
		}
		top = s.top.Load()
	}
	s.taken.Store(s.taken.Load() + uint64(top.seq-s.bottom.seq))
	return s.unlink(top, sentinel)
}

// close makes every later push fail and returns what is still on the
// stack, oldest first. Only the worker may call it.
func (s *shard) close() takenList {
	taken := s.taken.Load()
	for {
		top := s.top.Load()
		if top == closedIntake {
			return takenList{}
		}
		// Count what is on the stack before closing it: a reader that finds
		// the stack closed takes the final count from taken.
		s.taken.Store(taken + uint64(top.seq-s.bottom.seq))
		if s.top.CompareAndSwap(top, closedIntake) {
			return s.unlink(top, closedIntake)
		}
	}
}

// unlink links, through their next fields, the timeouts from top down to
// the bottom, which it excludes, into a list oldest first, and makes
// newBottom the bottom.
func (s *shard) unlink(top, newBottom *timeout) takenList {
	var oldest *timeout
	found := uint32(0)
	for t := top; t != s.bottom; t = t.prev {
		t.next = oldest
		oldest = t
		found++
	}
	pushed := top.seq - s.bottom.seq
	s.bottom = newBottom
	return takenList{head: oldest, unlinked: int(pushed - found)}
}

// takenList is what takeAll or close took off a stack: timeouts linked
// through their next fields, oldest first, and the number of timeouts
// pushed meanwhile that later pushes unlinked, cancelled.
type takenList struct {
	head     *timeout
	unlinked int
}

// pop removes and returns the oldest timeout, or nil, and clears its next
// field, so that a timeout kept by its caller does not keep those after it.
func (l *takenList) pop() *timeout {
	t := l.head
	if t != nil {
		l.head, t.next = t.next, nil
	}
	return t
}

// pushed returns the number of timeouts pushed on the stack so far. It is
// safe for concurrent use.
func (s *shard) pushed() uint64 {
	taken := s.taken.Load() // before top: never more than top accounts for
	top := s.top.Load()
	if top == closedIntake {
		return s.taken.Load()
	}
	return taken + uint64(top.seq-uint32(taken))
}

// empty reports whether nothing was pushed since the last take. Only the
// worker may call it.
func (s *shard) empty() bool { return s.top.Load() == s.bottom }

// shardOf returns the shard for t, chosen by the 8 KiB page that holds t.
// The runtime allocates from a page per P, so goroutines running at once on
// different Ps mostly allocate from different pages and so push to
// different shards, with no coordination and no random draw; and the
// timeouts one goroutine makes in a row share a shard, so the worker links
// them into buckets in allocation order, which keeps its bucket walks
// sequential in memory. The heap does not move objects, so the address is a
// stable key.
func (h *HashedWheelTimer) shardOf(t *timeout) *shard {
	page := uint32(uintptr(unsafe.Pointer(t)) >> pageShift)
	return &h.shards[page&h.shardMask]
}

// pageShift is log2 of the runtime's page size, 8 KiB.
const pageShift = 13

// wakeEvery is how many timeouts a shard's intake stack, or its
// cancellation queue, takes in between the wake-ups it gives a worker that
// is sleeping until its next tick. Without them, a timeout cancelled soon
// after it was made stayed queued until the tick: up to a whole tick of
// churn, which the garbage collector marked as live in every cycle
// meanwhile and which cost each schedule and cancel about a fifth more.
// Woken every wakeEvery pushes, the worker drops them while a few thousand
// are queued; the wake-up costs the producer a fraction of a nanosecond per
// push. A power of two, so that it divides the 2³² of the push counts.
const wakeEvery = 4096

// queued is called with a queue's count of pushes after a push. Each time
// that count reaches a multiple of wakeEvery, it wakes the worker and
// yields the processor once, as an allocating goroutine assists the
// garbage collector. A woken goroutine waits in its waker's run queue:
// when every processor is busy, a producer in a tight loop would leave the
// worker there until preemption, up to 10ms later, while it queued tens of
// thousands more, which the garbage collector would mark meanwhile.
// Yielding, the producer lets the worker take them in at once, on the core
// whose cache still holds them; with a processor to spare, the scheduler
// runs the producer on it meanwhile. A yield costs about a microsecond every
// wakeEvery pushes.
func (h *HashedWheelTimer) queued(count uint64) {
	if count%wakeEvery == 0 {
		h.sleeper.Wake()
		runtime.Gosched()
	}
}

// intakeEmpty reports whether no new timeout is waiting on an intake
// stack. Only the worker may call it.
func (h *HashedWheelTimer) intakeEmpty() bool {
	for i := range h.shards {
		if !h.shards[i].empty() {
			return false
		}
	}
	return true
}

// scheduled returns the number of timeouts accepted so far.
func (h *HashedWheelTimer) scheduled() uint64 {
	var n uint64
	for i := range h.shards {
		n += h.shards[i].pushed()
	}
	return n
}
