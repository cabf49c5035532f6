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

// The intake is a lock-free stack threaded through the timeouts' prev
// fields: a push, of one timeout or of NewTimeouts' chain of them, costs
// one compare-and-swap and no allocation. The worker takes the whole stack
// by swapping a fresh sentinel onto it and reverses it, so that each
// producer's timeouts reach the wheel in order. The node a push puts on
// top has for seq the shard's count of pushes up to it, modulo 2³², and a
// sentinel the count when swapped in: the top tells how many the shard
// accepted, at no cost. A push onto a timeout cancelled before the worker
// took it links past it, so a timeout made and cancelled before the next
// one, the commonest fate of a request timeout, never reaches the worker.

// shard is one way to the worker: an intake stack of new timeouts, and a
// queue of the timeouts in a bucket that Cancel cancelled or Reset moved
// earlier; concurrent producers use different shards.
type shard struct {
	_   cpu.CacheLinePad
	top atomic.Pointer[timeout] // newest timeout, a sentinel, or closedIntake
	_   cpu.CacheLinePad

	reports  *mpsc.Queue[timeout] // timeouts in a bucket that Cancel cancelled or Reset moved earlier
	reported atomic.Bool          // set after a push onto reports, cleared by the worker before its pops

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

// newShards returns n shards (for n <= 0, enough for the processors),
// rounded up to a power of two.
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
		s.reports = mpsc.New[timeout]()
	}
	return shards
}

// take takes the timeouts pushed since the last take, swapping onto the
// stack a fresh sentinel or, closing, closedIntake, which fails every
// later push. It returns them linked through next, oldest first, and how
// many later pushes unlinked as cancelled. Each keeps its prev until the
// worker files or clears it (forgetBelow): a kept one keeps no other
// alive. Only the worker calls it.
func (s *shard) take(closing bool) (head, tail *timeout, unlinked int) {
	collected := s.collected.Load()
	for {
		top := s.top.Load()
		if top == closedIntake || top == s.bottom && !closing {
			return nil, nil, 0
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
		if found > 0 {
			tail = top
		}
		unlinked = int(top.seq - s.bottom.seq - found)
		s.bottom = next
		return head, tail, unlinked
	}
}

// pushed returns the number of timeouts pushed on the stack so far; it is
// safe for concurrent use.
func (s *shard) pushed() uint64 {
	collected := s.collected.Load() // before top: never more than top accounts for
	top := s.top.Load()
	if top == closedIntake {
		return s.collected.Load()
	}
	return collected + uint64(top.seq-uint32(collected))
}

// pushTimeouts pushes the n timeouts linked from first up to last through
// prev, all new, onto an intake stack, from any goroutine, and returns the
// shard's count of pushes, theirs included, modulo 2³², its index and the
// compare-and-swaps that failed; it fails once the intake closed. Only
// last is numbered: a count is read off the top alone.
//
// The stack is first that of first's 8 KiB page: the runtime allocates
// from a page per processor (P), so Ps mostly push onto different stacks
// for free. Once producers meet on one, the timer spreads them by P for good
// (spreadIfProducersMet): each P's hint picks its stack, and a hint
// another P shares, found by a failed swap or a replaced top this P did
// not push, is redrawn at random.
//
// A cancelled timeout on top without a Cancelled hook is unlinked: first
// links below it. Seen on top after it was seen cancelled, it was not
// taken, and never will be, or the swap fails.
func (h *HashedWheelTimer) pushTimeouts(first, last *timeout, n uint32) (count, index uint32, retries int, ok bool) {
	var hint *shardHint
	if h.spread.Load() {
		hint = shardHints.Get().(*shardHint)
		index = hint.n & h.shardMask
	} else {
		index = uint32(uintptr(unsafe.Pointer(first))>>pageShift) & h.shardMask
	}
	for {
		s := &h.shards[index]
		top := s.top.Load()
		if top == closedIntake {
			break
		}
		below := top
		if top.word.Load()&stateMask == stateCancelled && cancelledHookOf(top.task) == nil && s.top.Load() == top {
			below = top.below()
		}
		// Not yet published: the swap orders these writes before it.
		first.prev, last.seq = below, top.seq+n
		if s.top.CompareAndSwap(top, last) {
			if below != top {
				top.forgetBelow() // off the stack for good: a push still reading it fails
			}
			if hint != nil {
				if top.task != nil && uintptr(unsafe.Pointer(top)) != hint.last {
					hint.n = rand.Uint32() // for the next push: this one is done
				}
				hint.last = uintptr(unsafe.Pointer(last))
				shardHints.Put(hint)
			}
			return last.seq, index, retries, true
		}
		retries++
		if hint != nil {
			hint.n = rand.Uint32()
		} else if h.spreadIfProducersMet(s) {
			hint = shardHints.Get().(*shardHint)
		} else {
			continue
		}
		index = hint.n & h.shardMask
	}
	if hint != nil {
		shardHints.Put(hint)
	}
	return 0, index, retries, false
}

// spreadIfProducersMet, after a failed push onto s, spreads producers by
// processor if another's timeout is on top (a take leaves a sentinel, with
// no task), and reports whether it did.
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

// pageShift is log2 of the runtime's page, 8 KiB. Heap objects never move:
// a page is a stable key.
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
// unlink, or that Reset moved earlier, to file again: its state tells
// which. A push the queue refuses comes after the worker stopped: shutdown
// completes the cancellations, and a move no longer matters.
func (h *HashedWheelTimer) report(t *timeout) {
	s := &h.shards[uint32(uintptr(unsafe.Pointer(t))>>pageShift)&h.shardMask]
	if index, ok := s.reports.Push(t); ok {
		s.reported.Store(true)
		h.nudgeWorker(index+1, 1)
	}
}

// nudgeWorker, after a push of n that brought a stack's or queue's count
// to count, wakes the worker at once if it sleeps past its next tick, else
// every wakeEvery pushes, yielding so that it runs even when producers
// busy every processor.
func (h *HashedWheelTimer) nudgeWorker(count, n uint64) {
	switch {
	case h.idle.Load():
		if h.idle.CompareAndSwap(true, false) {
			h.sleeper.Wake()
		}
	case count%wakeEvery < n: // the push passed a multiple of wakeEvery
		h.sleeper.Wake()
		runtime.Gosched()
	}
}
