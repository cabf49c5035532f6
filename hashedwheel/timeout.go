package hashedwheel

import (
	"fmt"
	"time"
)

func (t *timeout) Timer() Timer    { return t.timer }
func (t *timeout) Task() TimerTask { return t.task }

// Deadline reads the wall clock now and adds what remains until the
// deadline on the monotonic clock, which the timer keeps: a step of the
// wall clock since the timeout was made moves the time reported with it,
// and the task never runs before the time reported.
func (t *timeout) Deadline() time.Time {
	return t.timer.clock.Now().Add(t.remaining())
}

// remaining returns the time until the deadline, on the timer's monotonic
// clock; negative once it has passed.
func (t *timeout) remaining() time.Duration {
	return time.Duration(deadlineOf(t.word.Load()) - t.timer.now())
}

func (t *timeout) IsExpired() bool   { return t.currentState() == stateExpired }
func (t *timeout) IsCancelled() bool { return t.currentState() == stateCancelled }

// Cancel cancels the timeout if it has neither expired nor been cancelled,
// counts it and frees its place under the pending limit. A timeout the
// worker has not taken in needs nothing more: the worker, or the next push
// onto its stack, drops it. One in a bucket is reported to the worker,
// which unlinks it and calls its Cancelled hook.
func (t *timeout) Cancel() bool {
	for {
		w := t.word.Load()
		switch stateOf(w) {
		case stateQueued:
			if t.word.CompareAndSwap(w, withState(w, stateCancelled)) {
				t.timer.countCancelled(1)
				return true
			}
		case stateScheduled:
			if t.word.CompareAndSwap(w, withState(w, stateCancelled)) {
				t.timer.countCancelled(1)
				t.timer.reportCancelled(t)
				return true
			}
		default:
			return false
		}
	}
}

// Reset moves the deadline to now + delay if the timeout has neither
// expired nor been cancelled. A later deadline costs the worker nothing
// now: it re-files the timeout when the old deadline's bucket comes round.
// An earlier one is reported to the worker, which re-files the timeout by
// then.
func (t *timeout) Reset(delay time.Duration) bool {
	h := t.timer
	d := deadline(h.now(), delay)
	for {
		w := t.word.Load()
		s := stateOf(w)
		if s != stateQueued && s != stateScheduled {
			return false
		}
		// A periodic run claimed and not yet started, or owed, is revoked:
		// no run starts before the new deadline.
		next := withDeadline(w, d) &^ claimedBit
		if !t.word.CompareAndSwap(w, next) {
			continue
		}
		if w&claimedBit != 0 {
			h.counters.periodicSkipped.Add(1)
		}
		if w&runningBit != 0 { // that run completes, maybe begun after we return
			h.counters.resetsDuringRun.Add(1)
		}
		h.counters.resets.add(1)
		// A queued timeout is filed by the deadline the worker reads when
		// it takes it in; a scheduled one is filed by an older deadline,
		// never later than the one it replaced.
		if s == stateScheduled && h.tickDue(d) < h.tickDue(deadlineOf(w)) {
			h.reportMovedEarlier(t)
		}
		return true
	}
}

// cancelForStop cancels a timeout on behalf of Stop; it fails if Cancel
// got there first.
func (t *timeout) cancelForStop() bool {
	for {
		w := t.word.Load()
		if s := stateOf(w); s != stateQueued && s != stateScheduled {
			return false
		}
		if t.word.CompareAndSwap(w, withState(w, stateCancelled)) {
			return true
		}
	}
}

func (t *timeout) String() string {
	state := ""
	switch t.currentState() {
	case stateCancelled:
		state = ", cancelled"
	case stateExpired:
		state = ", expired"
	}
	return fmt.Sprintf("HashedWheelTimeout(deadline: %s%s, task: %s)",
		t.Deadline().Format(time.RFC3339Nano), state, taskName(t.task))
}
