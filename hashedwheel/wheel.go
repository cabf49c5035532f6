package hashedwheel

import "math"

// wheel is the rounds-based hashed timing wheel (Varghese and Lauck's
// scheme 6, as in Netty). Tick n covers deadlines in
// [n·tickDuration, (n+1)·tickDuration) and is expired once the clock has
// passed its end, so a timeout never expires before its deadline. A
// timeout whose tick is further away than one turn of the wheel waits in
// its bucket with a count of the turns still to go.
//
// Only the worker goroutine touches a wheel.
type wheel struct {
	buckets      []bucket
	mask         int64 // len(buckets)-1; len is a power of two
	tickDuration int64 // nanoseconds
	tick         int64 // the next tick to expire
	size         int   // timeouts linked in buckets
}

func newWheel(ticksPerWheel int, tickDuration int64) *wheel {
	return &wheel{
		buckets:      make([]bucket, ticksPerWheel),
		mask:         int64(ticksPerWheel - 1),
		tickDuration: tickDuration,
	}
}

// schedule takes the queued timeout t and links it into the bucket of the
// tick that covers its deadline, or into the current tick's bucket if that
// tick has passed. It fails, linking nothing, if t was cancelled while
// queued.
func (w *wheel) schedule(t *timeout) bool {
	due := t.deadline / w.tickDuration
	index := max(due, w.tick) & w.mask
	if !t.take(uint32(index)) {
		return false
	}
	// Rounds count from the current tick: counting them from tick zero made
	// re-scheduled timeouts drift later and later (netty#1959).
	t.remainingRounds = (due - w.tick) / int64(len(w.buckets))
	w.buckets[index].add(t)
	w.size++
	return true
}

// remove unlinks t from its bucket.
func (w *wheel) remove(t *timeout) {
	w.buckets[t.bucketIndex()].remove(t)
	w.size--
}

// expire walks the current tick's bucket: it claims each timeout with no
// rounds left, unlinks it and appends it to due, and takes one round from
// each of the others. Cancelled timeouts are left for the cancellation pass,
// which unlinks them. now is the clock, in nanoseconds after the start, at
// or after the end of the current tick. It returns due and the number of
// timeouts found due but out of place (never non-zero unless the
// arithmetic is broken); those are kept, not fired early.
func (w *wheel) expire(now int64, due []*timeout) ([]*timeout, int) {
	b := &w.buckets[w.tick&w.mask]
	misplaced := 0
	for t := b.head; t != nil; {
		switch {
		case t.remainingRounds > 0:
			if t.currentState() != stateCancelled {
				t.remainingRounds--
			}
			t = t.next
		case t.deadline > now:
			misplaced++
			t = t.next
		case t.claim():
			next := b.remove(t)
			w.size--
			due = append(due, t)
			t = next
		default: // cancelled: the cancellation pass unlinks it
			t = t.next
		}
	}
	return due, misplaced
}

// advance moves to the next tick.
func (w *wheel) advance() { w.tick++ }

// tickEnd returns the instant, in nanoseconds after the start, at which the
// current tick may be expired.
func (w *wheel) tickEnd() int64 {
	if w.tick >= math.MaxInt64/w.tickDuration { // (tick+1)·tickDuration overflows
		return math.MaxInt64
	}
	return (w.tick + 1) * w.tickDuration
}

// skipTo moves an empty wheel to the tick that covers instant, so that a
// worker waking from idleness does not replay the ticks it slept through.
func (w *wheel) skipTo(instant int64) {
	if w.size == 0 {
		w.tick = max(w.tick, instant/w.tickDuration)
	}
}

// clear unlinks every timeout and calls f for each.
func (w *wheel) clear(f func(*timeout)) {
	for i := range w.buckets {
		w.buckets[i].clear(f)
	}
	w.size = 0
}
