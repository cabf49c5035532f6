package hashedwheel

import (
	"fmt"
	"math"
	"math/bits"
)

// wheel is the hashed timing wheel of Varghese and Lauck's scheme 6, as in
// Netty. Tick n covers deadlines in (n·tickDuration, (n+1)·tickDuration]
// and expires once the clock has reached its end: never before a deadline.
// A timeout more than a turn away waits in its bucket.
//
// Where Netty counts each timeout's turns left, the wheel compares its
// deadline's tick with the current one, so a Reset moving a deadline later
// needs nothing: the walk finding it not due refiles it. Invariants: a
// timeout's bucket is for a tick at or before its deadline's; nothing is
// due before the tick earliest, through which the worker sleeps. Only the
// worker touches a wheel.
type wheel struct {
	buckets      []bucket
	occupied     []uint64   // bit i is set while bucket i is not empty
	mask         int64      // len(buckets)-1; len is a power of two
	tickDuration int64      // nanoseconds
	tick         int64      // the next tick to expire
	size         int        // timeouts linked in buckets
	earliest     int64      // lowered by each link, recomputed once the wheel reaches it
	schedules    []*timeout // of ScheduleFunc, found due, still linked, for the worker to claim after the walk
	verifyCredit int        // with verifyEachStep: the work since the last check (verifyStep)
}

// bucket is one slot of the wheel: a doubly-linked list of timeouts, in
// the order added, and a tick none is due before: exact after its walk,
// lowered by each link, MaxInt64 while empty.
type bucket struct {
	head, tail *timeout
	minDue     int64
}

func newWheel(ticksPerWheel int, tickDuration int64) *wheel {
	wh := &wheel{
		buckets:      make([]bucket, ticksPerWheel),
		occupied:     make([]uint64, (ticksPerWheel+63)/64),
		mask:         int64(ticksPerWheel - 1),
		tickDuration: tickDuration,
		earliest:     math.MaxInt64,
	}
	for i := range wh.buckets {
		wh.buckets[i].minDue = math.MaxInt64
	}
	return wh
}

// refile moves t to the bucket of its current deadline.
func (wh *wheel) refile(t *timeout) {
	wh.unlink(t)
	wh.link(t, deadlineOf(t.word.Load()))
}

// link appends t, due at d, to the bucket of the later of d's tick
// (tickDue) and the current tick.
func (wh *wheel) link(t *timeout, d int64) {
	if verifyEachStep {
		wh.verifyCredit++
	}
	due := max((d-1)/wh.tickDuration, wh.tick)
	i := due & wh.mask
	b := &wh.buckets[i]
	t.prev, t.next = b.tail, nil
	if b.tail == nil {
		b.head = t
	} else {
		b.tail.next = t
	}
	b.tail = t
	b.minDue = min(b.minDue, due)
	t.bucket = uint32(i) + 1
	wh.occupied[i>>6] |= 1 << (i & 63)
	wh.earliest = min(wh.earliest, due)
	wh.size++
}

// unlink takes t out of its bucket.
func (wh *wheel) unlink(t *timeout) {
	if verifyEachStep {
		wh.verifyCredit++
	}
	i := int64(t.bucket - 1)
	b := &wh.buckets[i]
	if t.prev == nil {
		b.head = t.next
	} else {
		t.prev.next = t.next
	}
	if t.next == nil {
		b.tail = t.prev
	} else {
		t.next.prev = t.prev
	}
	t.next, t.prev, t.bucket = nil, nil, 0
	if b.head == nil {
		b.minDue = math.MaxInt64
		wh.occupied[i>>6] &^= 1 << (i & 63)
	}
	wh.size--
}

// expiry counts what one bucket walk did.
type expiry struct {
	expired   int // one-shot timeouts claimed
	runs      int // periodic runs claimed
	skipped   int // periodic runs skipped: one waited to start, or the worker was late
	misplaced int // found due with a deadline after now: kept, never fired early
}

// expire walks the current tick's bucket at now, at or after its end, and
// moves to the next tick. It claims and unlinks each timeout due and
// appends it to due; claims each due run of a periodic timeout, appends it
// and files the timeout for its next run; and files elsewhere each timeout
// a Reset moved to another tick. It leaves cancelled ones to the
// cancellation pass, and due schedules of ScheduleFunc to the worker
// (wh.schedules), whose claim calls user code.
func (wh *wheel) expire(now int64, due []dueRun) ([]dueRun, expiry) {
	if verifyEachStep {
		wh.verifyCredit++
	}
	var ex expiry
	end := (wh.tick + 1) * wh.tickDuration // by now: no overflow
	b := &wh.buckets[wh.tick&wh.mask]
	b.minDue = math.MaxInt64 // recomputed from what stays
	for t, next := b.head, (*timeout)(nil); t != nil; t = next {
		next = t.next
	visit:
		w := t.word.Load()
		if w&stateMask != stateScheduled {
			continue // cancelled: the cancellation pass unlinks it
		}
		d := deadlineOf(w)
		switch {
		case d > end: // not due in this tick
			if tick := tickDue(d, wh.tickDuration); tick&wh.mask == wh.tick&wh.mask {
				b.minDue = min(b.minDue, tick) // a later turn
			} else {
				wh.unlink(t) // Reset moved it later
				wh.link(t, d)
			}
		case d > now:
			ex.misplaced++
			b.minDue = min(b.minDue, wh.tick)
		case t.period == scheduledPeriod:
			wh.schedules = append(wh.schedules, t)
		case t.period != 0:
			// The next run is the first of the period's after this tick.
			next, skipped := nextFixedRun(d, now/wh.tickDuration*wh.tickDuration, t.period)
			word, run, skip := claimRun(w, next, 0)
			if !t.word.CompareAndSwap(w, word) {
				goto visit
			}
			ex.skipped += skipped + skip
			wh.unlink(t)
			wh.link(t, deadlineOf(word))
			if run {
				ex.runs++
				due = append(due, dueRun{Deadline: d, Task: t})
			}
		case t.word.CompareAndSwap(w, w&^stateMask|stateExpired):
			wh.unlink(t)
			ex.expired++
			due = append(due, dueRun{Deadline: d, Task: t})
		default:
			goto visit // cancelled or moved meanwhile
		}
	}
	wh.tick++
	if wh.size == 0 {
		wh.earliest = math.MaxInt64
	} else if wh.earliest < wh.tick {
		wh.earliest = wh.findEarliest(wh.tick)
	}
	return due, ex
}

// findEarliest returns a tick, from or later, before which nothing is due:
// the least bound of the buckets, scanned from from's, skipping empty
// ones, until no later bucket can hold a lesser one.
func (wh *wheel) findEarliest(from int64) int64 {
	best := int64(math.MaxInt64)
	n := int64(len(wh.buckets))
	start := from & wh.mask
	for k := int64(0); k < n && from+k < best; {
		i := (start + k) & wh.mask
		rest := wh.occupied[i>>6] >> (i & 63)
		if rest&1 == 0 {
			skip := 64 - i&63
			if rest != 0 {
				skip = int64(bits.TrailingZeros64(rest))
			}
			k += min(skip, n-i) // no further than the end of the array
			continue
		}
		best = min(best, wh.buckets[i].minDue)
		k++
	}
	return max(best, from)
}

// endOf returns the instant tick ends, saturating.
func (wh *wheel) endOf(tick int64) int64 {
	if tick >= math.MaxInt64/wh.tickDuration { // (tick+1)·tickDuration overflows
		return math.MaxInt64
	}
	return (tick + 1) * wh.tickDuration
}

// clear unlinks every timeout and calls f for each.
func (wh *wheel) clear(f func(*timeout)) {
	for i := range wh.buckets {
		b := &wh.buckets[i]
		for t := b.head; t != nil; {
			next := t.next
			t.next, t.prev, t.bucket = nil, nil, 0
			f(t)
			t = next
		}
		*b = bucket{minDue: math.MaxInt64}
	}
	clear(wh.occupied)
	wh.size = 0
	wh.earliest = math.MaxInt64
}

// verify checks the wheel's invariants: occupied bits, links, states and
// size. While the worker runs, only the worker may call it.
func (wh *wheel) verify() error {
	linked := 0
	for i := range wh.buckets {
		n, err := wh.verifyBucket(i)
		if err != nil {
			return err
		}
		linked += n
	}
	if linked != wh.size {
		return fmt.Errorf("the buckets link %d timeouts, size is %d", linked, wh.size)
	}
	return nil
}

// verifyStep is the check of the wheeltimer_verify build tag after each
// step that changes the wheel: verify, at every step on a wheel
// of verifyAlways buckets and timeouts or fewer, else once the work since
// the last check is a verifyShare-th of the check's, so that checking
// costs at most verifyShare times the work it checks.
func (wh *wheel) verifyStep() error {
	wh.verifyCredit++
	if cost := len(wh.buckets) + wh.size; cost > verifyAlways && wh.verifyCredit*verifyShare < cost {
		return nil
	}
	wh.verifyCredit = 0
	return wh.verify()
}

// verifyAlways and verifyShare set how often verifyStep checks the wheel.
const (
	verifyAlways = 1024
	verifyShare  = 4
)

// verifyBucket checks bucket i (see verify) and returns how many timeouts
// it links.
func (wh *wheel) verifyBucket(i int) (linked int, err error) {
	b := &wh.buckets[i]
	occupied := wh.occupied[i>>6]&(1<<(i&63)) != 0
	if occupied != (b.head != nil) {
		return 0, fmt.Errorf("bucket %d: occupied bit %v, head %p", i, occupied, b.head)
	}
	var prev *timeout
	for t := b.head; t != nil; prev, t = t, t.next {
		linked++
		if t.prev != prev {
			return 0, fmt.Errorf("bucket %d: %v links back to %p, not %p", i, t, t.prev, prev)
		}
		if t.bucket != uint32(i)+1 {
			return 0, fmt.Errorf("bucket %d holds %v, which records bucket %d", i, t, int(t.bucket)-1)
		}
		// A cancelled one's report, queued, unlinks it.
		if s := t.word.Load() & stateMask; s != stateScheduled && s != stateCancelled {
			return 0, fmt.Errorf("bucket %d holds %v in state %d", i, t, s)
		}
	}
	if b.tail != prev {
		return 0, fmt.Errorf("bucket %d: tail %p, last %p", i, b.tail, prev)
	}
	if b.head == nil && b.minDue != math.MaxInt64 {
		return 0, fmt.Errorf("empty bucket %d has the bound %d", i, b.minDue)
	}
	return linked, nil
}
