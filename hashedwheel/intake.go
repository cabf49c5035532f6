package hashedwheel

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/wheeltimer/wheeltimer/mpsc"
	"golang.org/x/sys/cpu"
)

// The intake is a lock-free stack threaded through the timeouts' own prev
// fields: a push costs one compare-and-swap and no allocation. The worker
// takes the whole stack by swapping a fresh sentinel onto it, and reverses
// it, so that each producer's timeouts reach the wheel in order. Each node
// carries in seq the shard's count of pushes up to it, modulo 2³², each
// sentinel the count when swapped in: the top tells how many the shard
// accepted, at no cost. A push onto a timeout cancelled before the worker
// took it links past it, so a timeout made and cancelled before the next
// one, the commonest fate of a request timeout, never reaches the worker.

// shard is one way to the worker: an intake stack for new timeouts, and
// queues of the timeouts in a bucket that Cancel cancelled or Reset moved
// earlier. Producers running at once use different shards (pushTimeout).
type shard struct {
	_   cpu.CacheLinePad
	top atomic.Pointer[timeout] // newest timeout, a sentinel, or closedIntake
	_   cpu.CacheLinePad

	cancelled *mpsc.Queue[timeout] // timeouts in a bucket that Cancel cancelled, each once
	moved     *mpsc.Queue[timeout] // timeouts in a bucket that Reset moved earlier
	reported  atomic.Bool          // set after a push onto either queue, cleared by the worker before it pops them

	// Written by the worker alone.
	collected atomic.Uint64 // timeouts collected off the stack so far
	bottom    *timeout      // the sentinel swapped in by the last collect
}

// closedIntake is the top of every closed intake stack.
var closedIntake = new(timeout)

// shardsPerCPU spreads producers over enough stacks that two running at
// once seldom collide.
const shardsPerCPU = 4

// maxShards bounds the memory of an idle timer on a large machine.
const maxShards = 64

// newShards returns n shards, or, for n = 0, enough for this machine's
// processors, rounded up to a power of two.
func newShards(n int) []shard {
	if n <= 0 {
		n = min(runtime.GOMAXPROCS(0)*shardsPerCPU, maxShards)
	}
	n = 1 << bits.Len(uint(n-1)) // a power of two, for masking
	shards := make([]shard, n)
	for i := range shards {
		s := &shards[i]
		s.bottom = new(timeout)
		s.top.Store(s.bottom)
		s.cancelled = mpsc.New[timeout]()
		s.moved = mpsc.New[timeout]()
	}
	return shards
}

// pushResult is what one attempt to push onto a stack came to.
type pushResult uint8

const (
	pushed        pushResult = iota
	pushClosed               // the stack is closed: nothing will be pushed on it
	pushContended            // another push or a collect changed the top first
)

// tryPush makes one attempt to put t on top of the stack, and returns,
// once pushed, the shard's count of pushes, t included, modulo 2³², and
// the node t replaced. It is safe for concurrent use.
//
// A cancelled timeout on top without a Cancelled hook is unlinked: t links
// below it. Seen on top after it was seen cancelled, it was not taken, and
// never will be, or the swap fails.
func (s *shard) tryPush(t *timeout) (uint32, pushResult, *timeout) {
	top := s.top.Load()
	if top == closedIntake {
		return 0, pushClosed, nil
	}
	below := top
	if stateOf(top.word.Load()) == stateCancelled && cancelledHookOf(top.task) == nil && s.top.Load() == top {
		below = top.below()
	}
	// t is not yet published: the swap orders these writes before it.
	t.prev, t.seq = below, top.seq+1
	if !s.top.CompareAndSwap(top, t) {
		return 0, pushContended, nil
	}
	if below != top {
		// top is off the stack for good: a push still reading it fails.
		top.forgetBelow()
	}
	return t.seq, pushed, top
}

// take takes every timeout pushed since the last take off the stack,
// swapping a fresh sentinel onto it, or, closing, closedIntake, which
// fails every later push. It returns them linked through next, oldest
// first, and how many later pushes unlinked, cancelled. Each keeps its
// prev until the worker files it or clears it (forgetBelow), so that a
// caller keeping it keeps no other alive. Only the worker may call it.
func (s *shard) take(closing bool) (head *timeout, unlinked int) {
	collected := s.collected.Load()
	for {
		top := s.top.Load()
		if top == closedIntake || top == s.bottom && !closing {
			return nil, 0
		}
		next := closedIntake
		if !closing {
			next = &timeout{seq: top.seq}
		}
		// Counted first: a reader finding next on top counts by collected.
		s.collected.Store(collected + uint64(top.seq-s.bottom.seq))
		if !s.top.CompareAndSwap(top, next) {
			continue
		}
		found := uint32(0)
		for t := top; t != s.bottom; t = t.prev {
			t.next, head = head, t
			found++
		}
		unlinked = int(top.seq - s.bottom.seq - found)
		s.bottom = next
		return head, unlinked
	}
}

// pushed returns the number of timeouts pushed on the stack so far. It is
// safe for concurrent use.
func (s *shard) pushed() uint64 {
	collected := s.collected.Load() // before top: never more than top accounts for
	top := s.top.Load()
	if top == closedIntake {
		return s.collected.Load()
	}
	return collected + uint64(top.seq-uint32(collected))
}

// pushTimeout pushes t onto an intake stack and returns the shard's count
// of pushes, the shard's index, and the compare-and-swaps that failed; it
// fails once the intake is closed.
//
// The stack is first that of the 8 KiB page holding t: the runtime
// allocates from a page per processor (P), so Ps mostly push onto
// different stacks, at no cost. The first time producers meet on one, the
// timer spreads them by P for good (pushByProcessor).
func (h *HashedWheelTimer) pushTimeout(t *timeout) (count, index uint32, retries int, ok bool) {
	if h.spread.Load() {
		return h.pushByProcessor(t)
	}
	index = uint32(uintptr(unsafe.Pointer(t))>>pageShift) & h.shardMask
	s := &h.shards[index]
	for {
		count, r, _ := s.tryPush(t)
		if r != pushContended {
			return count, index, retries, r == pushed
		}
		retries++
		if h.spreadIfProducersMet(s) {
			count, index, more, ok := h.pushByProcessor(t)
			return count, index, retries + more, ok
		}
	}
}

// spreadIfProducersMet, after a push onto s failed, makes the timer spread
// producers by processor if another's timeout is on top (a take leaves a
// sentinel, which has no task), and reports whether it did.
func (h *HashedWheelTimer) spreadIfProducersMet(s *shard) bool {
	if s.top.Load().task == nil {
		return false
	}
	h.spread.Store(true)
	return true
}

// shardHint is a processor's choice of shard, n&shardMask. shardHints, a
// sync.Pool, keeps one per P: goroutines running at once hold different
// hints, with no shared write, and one goroutine's timeouts go onto one
// stack, in order.
type shardHint struct {
	n    uint32
	last uintptr // the timeout last pushed with this hint; only compared
}

// nextShardHint numbers the hints as the pool makes them, so that the Ps'
// hints pick different shards while there are as many shards as Ps.
var nextShardHint atomic.Uint32

var shardHints = sync.Pool{New: func() any { return &shardHint{n: nextShardHint.Add(1)} }}

// pushByProcessor pushes t onto the calling P's shard, and returns what
// pushTimeout does. A hint another P shares, found by a failed swap or a
// replaced top this P did not push, moves to a random shard: Ps that met
// part at once.
func (h *HashedWheelTimer) pushByProcessor(t *timeout) (count, index uint32, retries int, ok bool) {
	hint := shardHints.Get().(*shardHint)
	for {
		index = hint.n & h.shardMask
		count, r, replaced := h.shards[index].tryPush(t)
		if r == pushContended {
			retries++
			hint.n = rand.Uint32()
			continue
		}
		if r == pushed && replaced.task != nil && uintptr(unsafe.Pointer(replaced)) != hint.last {
			hint.n = rand.Uint32() // for the next push: this one is done
		}
		hint.last = uintptr(unsafe.Pointer(t))
		shardHints.Put(hint)
		return count, index, retries, r == pushed
	}
}

// pageShift is log2 of the runtime's page size, 8 KiB. The heap does not
// move objects: a timeout's page is a stable key.
const pageShift = 13

// wakeEvery is how many pushes onto a stack or queue pass between the
// wake-ups it gives a ticking worker, so that churn is dropped while a few
// thousand are queued rather than at the tick. A power of two, it divides
// the 2³² of the push counts.
const wakeEvery = 4096

// intakeEmpty reports whether nothing waits for the worker: no new timeout
// on an intake stack, no report. Only the worker may call it.
func (h *HashedWheelTimer) intakeEmpty() bool {
	for i := range h.shards {
		if s := &h.shards[i]; s.top.Load() != s.bottom || s.reported.Load() {
			return false
		}
	}
	return true
}

// accepted returns the number of timeouts NewTimeout has accepted so far.
func (h *HashedWheelTimer) accepted() uint64 {
	var n uint64
	for i := range h.shards {
		n += h.shards[i].pushed()
	}
	return n
}

// report hands the worker a timeout in a bucket that Cancel cancelled, to
// unlink, or, moved, that Reset moved earlier, to file again. A push the
// queue refuses comes after the worker stopped: shutdown completes the
// cancellations, and a move no longer matters.
func (h *HashedWheelTimer) report(t *timeout, moved bool) {
	s := &h.shards[uint32(uintptr(unsafe.Pointer(t))>>pageShift)&h.shardMask]
	q := s.cancelled
	if moved {
		q = s.moved
	}
	if index, ok := q.Push(t); ok {
		s.reported.Store(true)
		h.nudgeWorker(index + 1)
	}
}

// nudgeWorker, after a push that brought a stack's or queue's count to
// count, wakes the worker at once if it sleeps past its next tick, else
// every wakeEvery pushes, yielding so that it runs even when producers
// busy every processor.
func (h *HashedWheelTimer) nudgeWorker(count uint64) {
	switch {
	case h.idle.Load():
		if h.idle.CompareAndSwap(true, false) {
			h.sleeper.Wake()
		}
	case count%wakeEvery == 0:
		h.sleeper.Wake()
		runtime.Gosched()
	}
}

// staging holds, oldest first, the new timeouts taken beyond a tick's
// budget, for the next ticks to move into the wheel first. Still queued,
// they cancel with one compare-and-swap. Only the worker touches it.
type staging struct {
	items []*timeout
	head  int // items[:head] have been popped and cleared
}

// maxKeptStaging bounds the capacity an empty staging keeps.
const maxKeptStaging = 1 << 14

func (s *staging) len() int { return len(s.items) - s.head }

// push appends t.
func (s *staging) push(t *timeout) {
	if len(s.items) == cap(s.items) && s.head >= len(s.items)/2 {
		// Reuse the popped half: amortised O(1), within twice the content.
		n := copy(s.items, s.items[s.head:])
		clear(s.items[n:])
		s.items, s.head = s.items[:n], 0
	}
	s.items = append(s.items, t)
}

// pop moves up to len(buf) timeouts, oldest first, into buf and returns
// how many.
func (s *staging) pop(buf []*timeout) int {
	n := copy(buf, s.items[s.head:])
	clear(s.items[s.head : s.head+n])
	s.head += n
	if s.head == len(s.items) {
		s.reset()
	}
	return n
}

// takeAll calls f for every timeout, oldest first, and empties s.
func (s *staging) takeAll(f func(*timeout)) {
	for _, t := range s.items[s.head:] {
		f(t)
	}
	clear(s.items)
	s.reset()
}

func (s *staging) reset() {
	s.head = 0
	if cap(s.items) > maxKeptStaging {
		s.items = nil
		return
	}
	s.items = s.items[:0]
}
