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
				t.timer.report(t, false)
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

// A timeout's state word holds its deadline and its state, so that Cancel,
// Reset and the worker's claim each decide with one compare-and-swap of one
// word: a claim that read a deadline fails if a Reset moved it meanwhile.
//
//	queued ──worker takes it in──▶ scheduled ──worker claims it──▶ expired
//	   │                              │
//	   └──Cancel or Stop──▶ cancelled ◀──Cancel or Stop──┘
//
// Reset rewrites the deadline of a queued or scheduled timeout and keeps
// its state. A periodic timeout stays scheduled, its runs marked by two
// bits (see periodic.go): each claim of a run advances its deadline to the
// next run's, and claimedBit and runningBit say whether a run waits to
// start and whether one is running.
const (
	stateQueued    uint64 = iota // on an intake stack or staged, not yet in a bucket
	stateScheduled               // linked in a bucket by the worker
	stateCancelled               // cancelled; the task will never run
	stateExpired                 // claimed by the worker; the task runs

	stateMask  = 1<<2 - 1
	claimedBit = 1 << 2  // a periodic timeout's run is claimed and waits to start
	runningBit = 1 << 63 // a periodic timeout's run is running
	flagsMask  = stateMask | claimedBit | runningBit

	// deadlineShift puts the deadline above the state, in units of 8ns, in
	// the 60 bits below runningBit: any deadline an int64 of nanoseconds
	// holds, the last unit standing for math.MaxInt64.
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
// stack and of its bucket list. Its size is 64 bytes: one allocation class,
// one cache line.
type timeout struct {
	timer *HashedWheelTimer
	task  TimerTask
	word  atomic.Uint64 // deadline and state

	// While queued, prev links the timeout to the node below it on its
	// shard's intake stack and seq counts it among the shard's pushes; both
	// are written before it is published. Producers may read prev of the
	// top of a stack, so it is cleared atomically (forgetBelow). Once the
	// worker has taken the timeout in, next and prev link it in its bucket,
	// and they, seq and bucket are the worker's alone.
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

// forgetBelow clears the timeout's link to the node below it on its intake
// stack, so that a caller keeping the timeout keeps nothing else alive.
// Producers may be reading it, hence the atomic store.
func (t *timeout) forgetBelow() {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev)), nil)
}

// run runs the task of a claimed timeout: once, or, for a periodic one,
// as its run marks say (see periodic.go).
func (t *timeout) run() {
	if t.period != 0 {
		t.runPeriodic()
		return
	}
	t.runTask()
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
	if f, ok := t.task.(funcTask); ok { // AfterFunc's, the commonest
		f()
	} else {
		t.task.Run(t)
	}
	returned = true
}
