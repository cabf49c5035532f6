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
// collects the whole stack at once by swapping a fresh sentinel onto it,
// and reverses what it collected through the next fields, so that each
// producer's timeouts reach the wheel in the order it made them. Every node
// carries in seq the number of timeouts pushed on the shard up to and
// including it, modulo 2³², and every sentinel the count when it was
// swapped in, so the top of the stack tells how many timeouts the shard
// has accepted: the count costs producers nothing more.
//
// A push onto a timeout cancelled before the worker collected it links past
// it (see below), so that a timeout made and cancelled before the next one
// is made on its stack, the commonest fate of a request timeout, never
// reaches the worker.

// shard is one of the ways by which producers reach the worker: an intake
// stack for new timeouts, and queues of the timeouts in a bucket that
// Cancel cancelled or Reset moved earlier. A new timeout goes onto the
// intake stack of its page's shard, or, once producers have met on one,
// of the calling processor's (see pushTimeout), so that goroutines running
// at once push onto different stacks; a timeout in a bucket is reported on
// the queues of the shard its page picks. The worker serves them all.
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

// tryPush makes one attempt to put t on top of the stack, with one
// compare-and-swap, and returns, once pushed, the number of timeouts the
// shard has accepted, t included, modulo 2³², and the node t replaced on
// top. It is safe for concurrent use.
//
// A timeout on top, cancelled before the worker collected it and without a
// Cancelled hook, is unlinked: t links to the node below it. Still on top
// after it was seen cancelled, it was not collected, and will never be
// linked into a bucket, which would rewrite its prev; if it is collected
// meanwhile, the swap fails. A timeout with a hook is left for the worker,
// which calls it.
func (s *shard) tryPush(t *timeout) (uint32, pushResult, *timeout) {
	top := s.top.Load()
	if top == closedIntake {
		return 0, pushClosed, nil
	}
	below := top
	if stateOf(top.word.Load()) == stateCancelled && cancelledHookOf(top.task) == nil && s.top.Load() == top {
		below = top.below()
	}
	// t is not yet published: these plain writes are seen by whoever
	// loads it from top, as the swap below orders them before it.
	t.prev, t.seq = below, top.seq+1
	if !s.top.CompareAndSwap(top, t) {
		return 0, pushContended, nil
	}
	if below != top {
		// top is off the stack for good: no push can make it the top
		// again, and a push still reading it fails its swap.
		top.forgetBelow()
	}
	return t.seq, pushed, top
}

// take takes off the stack every timeout pushed since the last take,
// swapping a fresh sentinel onto it, or, closing, closedIntake, which
// makes every later push fail. It returns them linked through their next
// fields, oldest first, each producer's in the order it made them, and how
// many pushed meanwhile later pushes unlinked, cancelled. Each keeps in
// prev its link to the timeout below it: the worker overwrites it as it
// files the timeout, and clears it (forgetBelow) if the timeout goes
// nowhere, so that a caller keeping it keeps no other alive. Only the
// worker may call it.
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
		// Counted first: a reader that finds next on top takes the count
		// from collected.
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
// of pushes, as push does, the index of the shard that took t, and the
// number of compare-and-swaps that failed on the way; it fails once the
// timer's intake is closed.
//
// The stack is first the one of the 8 KiB page that holds t: the runtime
// allocates from a page per processor (P), so Ps mostly push onto
// different stacks, at no cost. But the current pages of many Ps fall on
// fewer shards than there are Ps, so the first time a push fails its
// compare-and-swap because another producer pushed first (not the
// worker's collect), the timer spreads its producers by P for good (see
// pushByProcessor), whose pool costs a goroutine that contends with none.
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

// spreadIfProducersMet is called after a push onto s failed its
// compare-and-swap. If another producer's timeout is now on top (the
// worker's collect leaves a sentinel, which has no task), producers have
// met on s: it makes the timer spread them by processor and reports true.
func (h *HashedWheelTimer) spreadIfProducersMet(s *shard) bool {
	if s.top.Load().task == nil {
		return false
	}
	h.spread.Store(true)
	return true
}

// shardHint is a processor's choice of intake shard: pushByProcessor
// pushes onto the stack of shard n&shardMask. Hints live in shardHints, a
// sync.Pool, which keeps one per P: goroutines running at once run on
// different Ps and so hold different hints, with no shared write on the
// way; and the timeouts one goroutine makes in a row go onto one stack,
// which hands them to the worker in the order they were made.
type shardHint struct {
	n    uint32
	last uintptr // the timeout last pushed with this hint; only compared
}

// nextShardHint numbers the hints as the pool makes them, so that the
// hints of the Ps, made about when the Ps first schedule, pick different
// shards wherever there are at least as many shards as Ps (there are
// shardsPerCPU times as many, up to maxShards).
var nextShardHint atomic.Uint32

var shardHints = sync.Pool{New: func() any { return &shardHint{n: nextShardHint.Add(1)} }}

// pushByProcessor pushes t onto the intake stack of the calling P's
// shard, and returns what pushTimeout does. A hint that another P shares
// moves to a shard drawn at random: when this P's push fails its
// compare-and-swap, for another push got there first, or replaces on top
// a timeout that this P did not push last (a collect leaves a sentinel,
// which has no task). So Ps whose hints met part at once, wherever they
// run.
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

// pageShift is log2 of the runtime's page size, 8 KiB: a timeout's shard
// is first its page's. The runtime allocates from a page per P, so
// timeouts made on different Ps mostly fall on different shards; the heap
// does not move objects, so the address is a stable key.
const pageShift = 13

// wakeEvery is how many timeouts a shard's intake stack, or one of its
// queues, accepts between the wake-ups it gives a worker waiting for its
// next tick, so that churn is dropped while a few thousand are queued
// rather than held until the tick (docs/performance.md). A power of two,
// so that it divides the 2³² of the push counts.
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

// report hands the worker a timeout in a bucket that Cancel cancelled, for
// it to unlink, or, moved, that Reset moved earlier, for it to file again,
// on its page's shard. Once the worker has stopped taking them, the timer
// is stopping: its shutdown completes the cancellations it finds in the
// wheel, and a move no longer matters.
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

// nudgeWorker tells the worker, after a push that brought a stack's or
// queue's count to count, that there is work for it: at once if it sleeps
// past its next tick, and otherwise every wakeEvery pushes, yielding the
// processor so that the woken worker runs even when every processor is
// busy with producers.
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

// staging holds, oldest first, the new timeouts the worker has collected
// off the intake stacks beyond a tick's transfer budget, for the ticks
// that follow to move into the wheel before anything collected after them.
// Their state stays queued, so that cancelling one is still a single
// compare-and-swap, and the ticks drop those cancelled meanwhile. Only the
// worker touches it.
type staging struct {
	items []*timeout
	head  int // items[:head] have been popped and cleared
}

// maxKeptStaging bounds the capacity an empty staging keeps, so that a
// burst's worth of pointers is not held once the burst is in the wheel.
const maxKeptStaging = 1 << 14

func (s *staging) len() int { return len(s.items) - s.head }

// push appends t.
func (s *staging) push(t *timeout) {
	if len(s.items) == cap(s.items) && s.head >= len(s.items)/2 {
		// Reuse the popped half instead of growing: pushes and pops then
		// cost amortised O(1) and the slice stays within twice the content.
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
