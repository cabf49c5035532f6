package hashedwheel

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

func (t *timeout) Timer() Timer    { return t.timer }
func (t *timeout) Task() TimerTask { return t.task }

// Deadline is the wall clock now plus what remains on the timer's
// monotonic clock: a step of the wall clock moves it, and the task never
// runs before it.
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
// counts it and frees its place under the pending limit. One still queued
// is dropped by the worker or the next push onto its stack; one in a
// bucket is reported to the worker, which unlinks it and calls its hook.
func (t *timeout) Cancel() bool {
	for {
		w := t.word.Load()
		s := stateOf(w)
		if s != stateQueued && s != stateScheduled {
			return false
		}
		if t.word.CompareAndSwap(w, withState(w, stateCancelled)) {
			t.timer.countCancelled(1)
			if s == stateScheduled {
				t.timer.report(t, false)
			}
			return true
		}
	}
}

// Reset moves the deadline to now + delay if the timeout has neither
// expired nor been cancelled. A later one costs the worker nothing until
// the old bucket comes round; an earlier one is reported to it.
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
		// A queued timeout is filed by the deadline read when taken in.
		if s == stateScheduled && tickDue(d, h.tickNanos) < tickDue(deadlineOf(w), h.tickNanos) {
			h.report(t, true)
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

// A timeout's state word holds its deadline and its state: Cancel, Reset
// and the worker's claim each decide with one compare-and-swap, and a
// claim that read a deadline fails if a Reset moved it meanwhile.
//
//	queued ──worker takes it in──▶ scheduled ──worker claims it──▶ expired
//	   │                              │
//	   └──Cancel or Stop──▶ cancelled ◀──Cancel or Stop──┘
//
// Reset rewrites the deadline and keeps the state. A periodic timeout stays
// scheduled: each claim of a run advances its deadline to the next run's,
// and claimedBit and runningBit mark a run waiting to start, and running.
const (
	stateQueued    uint64 = iota // on an intake stack or staged, not yet in a bucket
	stateScheduled               // linked in a bucket by the worker
	stateCancelled               // cancelled; the task will never run
	stateExpired                 // claimed by the worker; the task runs

	stateMask  = 1<<2 - 1
	claimedBit = 1 << 2  // a periodic timeout's run is claimed and waits to start
	runningBit = 1 << 63 // a periodic timeout's run is running
	flagsMask  = stateMask | claimedBit | runningBit

	// The deadline, in units of 8ns, fills the 60 bits below runningBit,
	// the last unit standing for math.MaxInt64.
	deadlineShift = 3
	deadlineUnit  = 1 << deadlineShift
	maxDeadlineQ  = 1<<60 - 1
)

func stateOf(word uint64) uint64 { return word & stateMask }

// deadlineOf returns the deadline held in word, in nanoseconds after the
// timer's start.
func deadlineOf(word uint64) int64 {
	q := word >> deadlineShift & maxDeadlineQ
	if q == maxDeadlineQ {
		return math.MaxInt64
	}
	return int64(q << deadlineShift)
}

// withDeadline returns word with its deadline replaced by d, which is not
// negative, rounded up to a multiple of 8ns: never earlier than d.
func withDeadline(word uint64, d int64) uint64 {
	q := min((uint64(d)+deadlineUnit-1)>>deadlineShift, maxDeadlineQ)
	return q<<deadlineShift | word&flagsMask
}

// withState returns word with its state replaced by s.
func withState(word, s uint64) uint64 { return word&^stateMask | s }

// timeout is the Timeout of a HashedWheelTimer, and the node of its intake
// stack and bucket list: 64 bytes, one cache line.
type timeout struct {
	timer *HashedWheelTimer
	task  TimerTask
	word  atomic.Uint64 // deadline and state

	// While queued, prev links to the node below on the intake stack, which
	// producers may read (forgetBelow), and seq counts the shard's pushes.
	// Taken in, next and prev link the bucket: the worker's alone.
	next, prev *timeout
	seq        uint32
	bucket     uint32 // 1 + the index of the bucket that links it; 0 if none

	period int64 // nanoseconds between the runs of a periodic timeout; scheduledPeriod for ScheduleFunc's; 0 if one-shot
}

// currentState returns the state, without the deadline.
func (t *timeout) currentState() uint64 { return stateOf(t.word.Load()) }

// below returns the node below the timeout on its intake stack.
func (t *timeout) below() *timeout {
	return (*timeout)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev))))
}

// forgetBelow clears the link below, atomically for producers reading it,
// so that a caller keeping the timeout keeps nothing else alive.
func (t *timeout) forgetBelow() {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev)), nil)
}

// runTask runs the task, containing a panic or runtime.Goexit: counted
// and logged, it harms nothing else.
func (t *timeout) runTask() {
	returned := false
	defer func() {
		if !returned {
			t.timer.userCodeFailed(userTask, t, recover())
		}
	}()
	switch task := t.task.(type) { // called directly: a frame less under the user's function
	case funcTask: // AfterFunc's and Every's, the commonest
		task()
	case *scheduledTask:
		task.f()
	default:
		task.Run(t)
	}
	returned = true
}
