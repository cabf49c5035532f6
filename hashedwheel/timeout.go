package hashedwheel

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// The states of a timeout. Every timeout starts queued and ends cancelled
// or expired; each transition is one compare-and-swap, so exactly one of
// the worker, Cancel and Stop wins each timeout.
//
//	queued ──worker takes it──▶ scheduled ──worker claims it──▶ expired
//	   │                            │
//	   └──Cancel or Stop──▶ cancelled ◀──Cancel or Stop──┘
//
// The state is the low stateBits of the timeout's state word. Once the
// worker has taken a timeout, the rest of the word holds the index of the
// bucket that links it: taking it and recording where it went are one
// compare-and-swap, and the word stays 32 bits.
const (
	stateQueued    uint32 = iota // on an intake stack or staged, not yet in a bucket
	stateScheduled               // linked in a bucket by the worker
	stateCancelled               // cancelled; the task will never run
	stateExpired                 // claimed by the worker; the task runs

	stateBits = 2
	stateMask = 1<<stateBits - 1
)

// Every bucket index fits in the state word beside the state: this
// constant does not compile otherwise.
const _ uint32 = (MaxTicksPerWheel - 1) << stateBits

// timeout is the Timeout of a HashedWheelTimer, and the node of its intake
// stack and of its bucket list. Its size is 64 bytes: one allocation class,
// one cache line.
type timeout struct {
	timer    *HashedWheelTimer
	task     TimerTask
	deadline int64 // nanoseconds after the timer's start

	// While queued, prev links the timeout to the node below it on its
	// shard's intake stack and seq counts it among the shard's pushes; both
	// are written before it is published and seq never changes. Producers
	// read prev of a timeout cancelled while queued (see shard.under), and
	// the worker clears it when it drops one, both atomically (below,
	// forgetBelow). Once the worker has taken a timeout that is not
	// cancelled, next, prev and remainingRounds are the worker's alone.
	remainingRounds int64 // full turns of the wheel left before it is due
	next, prev      *timeout
	seq             uint32

	state atomic.Uint32 // the state, and the bucket index once scheduled
}

func (t *timeout) Timer() Timer    { return t.timer }
func (t *timeout) Task() TimerTask { return t.task }

func (t *timeout) Deadline() time.Time {
	return t.timer.startTime.Add(time.Duration(t.deadline))
}

func (t *timeout) IsExpired() bool   { return t.currentState() == stateExpired }
func (t *timeout) IsCancelled() bool { return t.currentState() == stateCancelled }

// Cancel cancels the timeout if it has neither expired nor been cancelled.
// A timeout the worker has not yet taken needs nothing more: the worker
// drops it when it takes it. One already in a bucket is reported to the
// worker, which unlinks it by its next tick.
func (t *timeout) Cancel() bool {
	for {
		switch s := t.state.Load(); s & stateMask {
		case stateQueued:
			if t.state.CompareAndSwap(s, stateCancelled) {
				return true
			}
		case stateScheduled:
			if t.state.CompareAndSwap(s, s&^stateMask|stateCancelled) {
				t.timer.reportCancelled(t)
				return true
			}
		default:
			return false
		}
	}
}

// below returns the node below the timeout on its intake stack.
func (t *timeout) below() *timeout {
	return (*timeout)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev))))
}

// forgetBelow clears the link of a timeout cancelled while queued to the
// node below it, once the worker has dropped it: a caller that keeps the
// cancelled timeout then does not keep the timeouts made before it.
func (t *timeout) forgetBelow() {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev)), nil)
}

// currentState returns the state, without the bucket index.
func (t *timeout) currentState() uint32 { return t.state.Load() & stateMask }

// bucketIndex returns the index of the bucket that links the timeout. Only
// the worker may call it, and only for a timeout it has taken.
func (t *timeout) bucketIndex() uint32 { return t.state.Load() >> stateBits }

// take moves a queued timeout into the wheel's hands, into the bucket at
// index; it fails if the timeout was cancelled while queued.
func (t *timeout) take(index uint32) bool {
	return t.state.CompareAndSwap(stateQueued, stateScheduled|index<<stateBits)
}

// claim marks a scheduled timeout expired so that its task may run; it
// fails if the timeout was cancelled.
func (t *timeout) claim() bool {
	s := t.state.Load()
	return s&stateMask == stateScheduled && t.state.CompareAndSwap(s, s&^stateMask|stateExpired)
}

// cancelForStop cancels a timeout on behalf of Stop; it fails if Cancel
// got there first.
func (t *timeout) cancelForStop() bool {
	for {
		s := t.state.Load()
		if st := s & stateMask; st != stateQueued && st != stateScheduled {
			return false
		}
		if t.state.CompareAndSwap(s, s&^stateMask|stateCancelled) {
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
	return fmt.Sprintf("HashedWheelTimeout(deadline: %s%s, task: %v)",
		t.Deadline().Format(time.RFC3339Nano), state, t.task)
}
