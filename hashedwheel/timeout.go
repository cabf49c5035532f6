package hashedwheel

import (
	"fmt"
	"sync/atomic"
	"time"
)

// The states of a timeout. Every timeout starts queued and ends cancelled
// or expired; each transition is one compare-and-swap, so exactly one of
// the worker, Cancel and Stop wins each timeout.
//
//	queued ──worker takes it──▶ scheduled ──worker claims it──▶ expired
//	   │                            │
//	   └──Cancel or Stop──▶ cancelled ◀──Cancel or Stop──┘
const (
	stateQueued    int32 = iota // pushed on an intake queue, not yet in a bucket
	stateScheduled              // linked in a bucket by the worker
	stateCancelled              // cancelled; the task will never run
	stateExpired                // claimed by the worker; the task runs
)

// timeout is the Timeout of a HashedWheelTimer, and the node of its bucket
// list. Its size is 64 bytes: one allocation class, one cache line.
type timeout struct {
	timer    *HashedWheelTimer
	task     TimerTask
	deadline int64 // nanoseconds after the timer's start

	// Owned by the worker goroutine.
	remainingRounds int64 // full turns of the wheel left before it is due
	next, prev      *timeout
	bucket          uint32 // index of the bucket that links it

	state atomic.Int32
}

func (t *timeout) Timer() Timer    { return t.timer }
func (t *timeout) Task() TimerTask { return t.task }

func (t *timeout) Deadline() time.Time {
	return t.timer.startTime.Add(time.Duration(t.deadline))
}

func (t *timeout) IsExpired() bool   { return t.state.Load() == stateExpired }
func (t *timeout) IsCancelled() bool { return t.state.Load() == stateCancelled }

// Cancel cancels the timeout if it has neither expired nor been cancelled.
// A timeout the worker has not yet taken needs nothing more: the worker
// drops it when it takes it. One already in a bucket is reported to the
// worker, which unlinks it on its next tick.
func (t *timeout) Cancel() bool {
	for {
		switch s := t.state.Load(); s {
		case stateQueued:
			if t.state.CompareAndSwap(stateQueued, stateCancelled) {
				return true
			}
		case stateScheduled:
			if t.state.CompareAndSwap(stateScheduled, stateCancelled) {
				t.timer.reportCancelled(t)
				return true
			}
		default:
			return false
		}
	}
}

// take moves a queued timeout into the wheel's hands; it fails if the
// timeout was cancelled while queued.
func (t *timeout) take() bool {
	return t.state.CompareAndSwap(stateQueued, stateScheduled)
}

// claim marks a scheduled timeout expired so that its task may run; it
// fails if the timeout was cancelled.
func (t *timeout) claim() bool {
	return t.state.CompareAndSwap(stateScheduled, stateExpired)
}

// cancelForStop cancels a timeout on behalf of Stop; it fails if Cancel
// got there first.
func (t *timeout) cancelForStop() bool {
	for {
		s := t.state.Load()
		if s != stateQueued && s != stateScheduled {
			return false
		}
		if t.state.CompareAndSwap(s, stateCancelled) {
			return true
		}
	}
}

func (t *timeout) String() string {
	state := ""
	switch t.state.Load() {
	case stateCancelled:
		state = ", cancelled"
	case stateExpired:
		state = ", expired"
	}
	return fmt.Sprintf("HashedWheelTimeout(deadline: %s%s, task: %v)",
		t.Deadline().Format(time.RFC3339Nano), state, t.task)
}
