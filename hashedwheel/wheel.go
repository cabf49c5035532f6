package hashedwheel

import (
	"fmt"
	"math"
	"math/bits"
)

// wheel is the hashed timing wheel of Varghese and Lauck's scheme 6, as in
// Netty. Tick n covers deadlines in (n·tickDuration, (n+1)·tickDuration]
// and is expired once the clock has reached its end, so a timeout never
// expires before its deadline, and one whose deadline is a tick's end
// expires at that end, as a runtime timer fires at its deadline. A timeout due more than one turn of the
// wheel away waits in its bucket, passed over until its turn comes.
//
// Where Netty counts the turns left in each timeout, the wheel compares the
// tick of the deadline in the timeout's state word with the current tick.
// A Reset that moves a deadline later then needs no bookkeeping: the walk
// that finds the timeout not yet due files it where its new deadline falls.
// And the wheel knows a tick before which nothing in it is due, so that the
// worker can sleep through the ticks in between instead of walking them.
//
// Only the worker goroutine touches a wheel.
type wheel struct {
	buckets      []bucket
	occupied     []uint64 // bit i is set while bucket i is not empty
	mask         int64    // len(buckets)-1; len is a power of two
	tickDuration int64    // nanoseconds
	tick         int64    // the next tick to expire
	size         int      // timeouts linked in buckets
	// earliest is a tick before which no timeout in the wheel is due:
	// lowered by each link, recomputed once the wheel reaches it.
	earliest int64
	// schedules holds the timeouts of ScheduleFunc that walks found due,
	// still linked, for the worker to claim once the walk is done.
	schedules []*timeout
	// With verifyEachStep only: the links, unlinks and walks, and the
	// steps, since the last check (verifyStep).
	verifyCredit int
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

// insert takes the queued timeout t into the wheel, in the bucket of the
// tick that covers its deadline, or of the current tick if that one has
// passed. It fails, linking nothing, if t was cancelled while queued.
func (wh *wheel) insert(t *timeout) bool {
	for {
		w := t.word.Load()
		if stateOf(w) != stateQueued {
			return false
		}
		if t.word.CompareAndSwap(w, withState(w, stateScheduled)) {
			wh.link(t, max(wh.tickDue(deadlineOf(w)), wh.tick))
			wh.size++
			return true
		}
	}
}

// refile moves a timeout already in the wheel to the bucket its current
// deadline falls in, after a Reset moved that deadline earlier.
func (wh *wheel) refile(t *timeout) {
	wh.unlink(t)
	wh.link(t, max(wh.tickDue(deadlineOf(t.word.Load())), wh.tick))
}

// link appends t to the bucket of tick due.
func (wh *wheel) link(t *timeout, due int64) {
	i := due & wh.mask
	if verifyEachStep {
		wh.verifyCredit++
	}
	wh.buckets[i].add(t, due)
	t.bucket = uint32(i) + 1
	wh.occupied[i>>6] |= 1 << (i & 63)
	wh.earliest = min(wh.earliest, due)
}

// unlink removes t from its bucket.
func (wh *wheel) unlink(t *timeout) {
	i := int64(t.bucket - 1)
	if verifyEachStep {
		wh.verifyCredit++
	}
	b := &wh.buckets[i]
	b.remove(t)
	t.bucket = 0
	if b.head == nil {
		wh.occupied[i>>6] &^= 1 << (i & 63)
	}
}

// remove takes t out of the wheel.
func (wh *wheel) remove(t *timeout) {
	wh.unlink(t)
	wh.size--
}

// expiry counts what one bucket walk did.
type expiry struct {
	expired   int // one-shot timeouts claimed
	runs      int // periodic runs claimed
	skipped   int // periodic runs skipped: one waited to start, or the worker was late
	misplaced int // found due with a deadline after now: kept, never fired early
}

// expire walks the current tick's bucket: it claims each timeout due by
// now, unlinks it and appends it to due; it claims each due run of a
// periodic timeout, appends it to due and files the timeout for its next
// run; and it files elsewhere each timeout that a Reset moved to another
// bucket's tick. Cancelled timeouts are left for the cancellation pass;
// due timeouts of ScheduleFunc, for the worker to claim (wh.schedules).
// now is the clock, in nanoseconds after the start, at or after the end of
// the current tick.
func (wh *wheel) expire(now int64, due []*timeout) ([]*timeout, expiry) {
	var ex expiry
	i := wh.tick & wh.mask
	if verifyEachStep {
		wh.verifyCredit++
	}
	b := &wh.buckets[i]
	b.minDue = math.MaxInt64 // recomputed from what stays
	for t := b.head; t != nil; {
		next := t.next
		due = wh.visit(b, t, now, due, &ex)
		t = next
	}
	if b.head == nil {
		b.minDue = math.MaxInt64
		wh.occupied[i>>6] &^= 1 << (i & 63)
	}
	return due, ex
}

// visit is expire's step for one timeout t of bucket b.
func (wh *wheel) visit(b *bucket, t *timeout, now int64, due []*timeout, ex *expiry) []*timeout {
	end := wh.tickEnd()
	for {
		w := t.word.Load()
		if stateOf(w) != stateScheduled {
			return due // cancelled: the cancellation pass unlinks it
		}
		d := deadlineOf(w)
		switch {
		case d > end: // not due in this tick
			if tick := wh.tickDue(d); tick&wh.mask == wh.tick&wh.mask {
				b.minDue = min(b.minDue, tick) // a later turn
			} else {
				wh.unlink(t) // Reset moved it later
				wh.link(t, tick)
			}
			return due
		case d > now:
			ex.misplaced++
			b.minDue = min(b.minDue, wh.tick)
			return due
		case t.period == scheduledPeriod:
			// Its claim calls the Scheduler's Next, user code that may
			// call Stop or runtime.Goexit: it waits, linked, until the
			// walk is done (worker.claimSchedules).
			wh.schedules = append(wh.schedules, t)
			return due
		case t.period != 0:
			next, run, skipped := t.claimPeriodic(w, wh.tickOf(now)*wh.tickDuration)
			if !t.word.CompareAndSwap(w, next) {
				continue
			}
			ex.skipped += skipped
			wh.unlink(t)
			wh.link(t, wh.tickDue(deadlineOf(next)))
			if !run {
				return due
			}
			t.markRunFor(d)
			ex.runs++
			return append(due, t)
		case t.word.CompareAndSwap(w, withState(w, stateExpired)):
			wh.remove(t)
			ex.expired++
			return append(due, t)
		}
	}
}

// advance moves to the next tick.
func (wh *wheel) advance() {
	wh.tick++
	if wh.earliest < wh.tick {
		wh.earliest = wh.findEarliest(wh.tick)
	}
}

// skipIdleTicks moves the wheel past the ticks before its earliest due
// tick, but not past tick limit: nothing in the skipped ticks' buckets is
// due in them.
func (wh *wheel) skipIdleTicks(limit int64) {
	wh.tick = max(wh.tick, min(wh.earliest, limit))
}

// findEarliest returns a tick, from or later, before which no timeout in
// the wheel is due: the least bound of the buckets, which it scans from
// from's, skipping empty ones, until no later bucket can hold a lesser one.
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

// tickOf returns the first tick that has not ended at instant, in
// nanoseconds after the start: the ticks before it may be expired.
func (wh *wheel) tickOf(instant int64) int64 { return instant / wh.tickDuration }

// tickDue returns the tick that covers deadline, a non-negative instant:
// the first whose end is at or after it (tick 0 for deadline 0).
func (wh *wheel) tickDue(deadline int64) int64 { return tickDue(deadline, wh.tickDuration) }

// tickEnd returns the instant, in nanoseconds after the start, at which the
// current tick may be expired.
func (wh *wheel) tickEnd() int64 { return wh.endOf(wh.tick) }

// endOf returns the instant at which tick ends, saturating instead of
// overflowing.
func (wh *wheel) endOf(tick int64) int64 {
	if tick >= math.MaxInt64/wh.tickDuration { // (tick+1)·tickDuration overflows
		return math.MaxInt64
	}
	return (tick + 1) * wh.tickDuration
}

// clear unlinks every timeout and calls f for each.
func (wh *wheel) clear(f func(*timeout)) {
	for i := range wh.buckets {
		wh.buckets[i].clear(func(t *timeout) {
			t.bucket = 0
			f(t)
		})
	}
	clear(wh.occupied)
	wh.size = 0
	wh.earliest = math.MaxInt64
}

// verify checks the wheel's invariants: the occupied bits are set exactly
// for the non-empty buckets; the buckets' lists are well linked, and each
// timeout in one records it and is scheduled or cancelled; the lists hold
// size timeouts in all; and, unless exact is false, no scheduled timeout is
// due before its bucket's bound or before earliest. exact is false while a
// Reset that moved a deadline earlier waits, reported, for the worker to
// file the timeout again, and while one may be under way: a Reset rewrites
// the deadline before it reports the move. While the worker runs, only the
// worker may call it (see verifyStep); the tests call it while the worker
// sleeps.
func (wh *wheel) verify(exact bool) error {
	linked := 0
	for i := range wh.buckets {
		n, err := wh.verifyBucket(i, exact)
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

// verifyStep is the check of the wheeltimer_verify build tag, which the
// worker makes after each step that changes the wheel (see
// verifyEachStep): a check of the whole wheel, not exact (see verify),
// after every step while the wheel holds verifyAlways buckets and
// timeouts or fewer; on a larger wheel, once the worker's work on it
// since the last check, a unit per link, unlink, walk and step, is a
// verifyShare-th of the check's, so that the checks cost at most
// verifyShare times the work they check. A check after every step would
// cost a wheel of 8192 buckets more than its tick under the race detector.
func (wh *wheel) verifyStep() error {
	wh.verifyCredit++
	if cost := len(wh.buckets) + wh.size; cost > verifyAlways && wh.verifyCredit*verifyShare < cost {
		return nil
	}
	wh.verifyCredit = 0
	return wh.verify(false)
}

// verifyAlways and verifyShare set how often verifyStep checks the wheel.
const (
	verifyAlways = 1024
	verifyShare  = 4
)

// verifyBucket checks bucket i (see verify) and returns how many timeouts
// it links.
func (wh *wheel) verifyBucket(i int, exact bool) (linked int, err error) {
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
		w := t.word.Load()
		switch stateOf(w) {
		case stateScheduled:
		case stateCancelled:
			continue // its cancellation, reported, unlinks it
		default:
			return 0, fmt.Errorf("bucket %d holds %v in state %d", i, t, stateOf(w))
		}
		tick := deadlineOf(w) / wh.tickDuration
		if exact && tick < b.minDue && tick >= wh.tick {
			return 0, fmt.Errorf("bucket %d holds %v due in tick %d, before its bound %d", i, t, tick, b.minDue)
		}
		if exact && tick < wh.earliest && tick >= wh.tick {
			return 0, fmt.Errorf("%v is due in tick %d, before earliest %d", t, tick, wh.earliest)
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
