package hashedwheel

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// NewTimeout schedules task to run once, after delay (to 8ns, rounded up;
// on the next tick if zero or less), on the timer's executor, starting the
// timer if needed. It fails, scheduling nothing, with ErrNilTask for a nil
// task, ErrStopped after Stop and ErrTooManyPendingTimeouts at the
// WithMaxPendingTimeouts limit. It never blocks and may be called from any
// goroutine; about once in a few thousand calls it yields the processor so
// that the worker keeps up.
func (h *HashedWheelTimer) NewTimeout(task TimerTask, delay time.Duration) (Timeout, error) {
	if nilTask(task) {
		return nil, ErrNilTask
	}
	return h.scheduleTimeout(&timeout{task: task}, delay, 0)
}

// nilTask reports whether task is nil or a nil TaskFunc, which NewTimeout
// and NewTimeouts refuse.
func nilTask(task TimerTask) bool {
	f, ok := task.(TaskFunc)
	return task == nil || ok && f == nil
}

// AfterFunc schedules f to run once, after delay, like time.AfterFunc. It
// fails as NewTimeout does, and with ErrNilTask for a nil f.
func (h *HashedWheelTimer) AfterFunc(delay time.Duration, f func()) (Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	return h.scheduleTimeout(&timeout{task: plainFunc(f)}, delay, 0)
}

// NewTimeouts schedules each of tasks to run once, after delay, as that
// many NewTimeout calls would, and returns their Timeouts in the order of
// tasks. It reads the clock once and hands them all to the worker at once,
// for less than the calls it replaces: all share one deadline, as the
// acknowledgements awaited after one broadcast or the shards of one query
// do. It schedules all or none: it fails with ErrNilTask, naming the first
// nil task, with ErrStopped after Stop and with ErrTooManyPendingTimeouts
// when the WithMaxPendingTimeouts limit leaves fewer places than tasks.
// With no tasks it schedules nothing and returns nil, nil. It never blocks
// and may be called from any goroutine.
func (h *HashedWheelTimer) NewTimeouts(delay time.Duration, tasks ...TimerTask) ([]Timeout, error) {
	for i, task := range tasks {
		if nilTask(task) {
			return nil, fmt.Errorf("%w: NewTimeouts: tasks[%d]", ErrNilTask, i)
		}
	}
	n := len(tasks)
	switch {
	case n == 0:
		return nil, nil
	case n > maxBatch:
		return nil, fmt.Errorf("%w: NewTimeouts: %d tasks, more than the %d the intake counts at once",
			ErrTooManyPendingTimeouts, n, maxBatch)
	}
	timeouts := make([]Timeout, n)
	var last *timeout
	for i, task := range tasks {
		t := &timeout{task: task, prev: last}
		timeouts[i], last = t, t
	}
	if _, err := h.scheduleTimeouts(timeouts[0].(*timeout), last, int64(n), delay, 0); err != nil {
		return nil, err
	}
	return timeouts, nil
}

// maxBatch bounds a NewTimeouts call: the intake counts pushes modulo 2³²,
// and a take must find fewer than that on a stack.
const maxBatch = 1 << 30

// scheduleTimeout hands t, new, to the worker, repeating every period ns
// if positive, and returns it; on failure, a nil Timeout, not one holding
// a nil *timeout.
func (h *HashedWheelTimer) scheduleTimeout(t *timeout, delay time.Duration, period int64) (Timeout, error) {
	return h.scheduleTimeouts(t, t, 1, delay, period)
}

// scheduleTimeouts hands the n new timeouts linked from first up to last
// through prev to the worker, all due after delay from one clock read,
// repeating every period ns if positive, and returns last. It fails,
// scheduling none and counting n refusals, as NewTimeout does, with a nil
// Timeout, not one holding a nil *timeout.
func (h *HashedWheelTimer) scheduleTimeouts(first, last *timeout, n int64, delay time.Duration, period int64) (Timeout, error) {
	if h.state.Load() != timerStarted {
		if err := h.startIfNeeded(uint64(n)); err != nil {
			return nil, err
		}
	}
	if h.maxPending > 0 && !h.admit(n) {
		h.counters.rejectedFull.Add(uint64(n))
		return nil, tooManyPending(h.maxPending)
	}
	now := h.now()
	if now < 0 || h.probeBubble && inABubble() {
		// A clock before the start: a bubble the timer was not started in.
		h.unadmit(n)
		if n > 1 {
			return nil, h.bubbleError("NewTimeouts")
		}
		return nil, h.bubbleError("NewTimeout")
	}
	// At least 1ns later: never in a tick already ended, processed or not.
	word := withDeadline(stateQueued, now, max(delay, 1))
	for t := last; ; t = t.prev {
		t.timer, t.period = h, period
		// A plain write: the push that publishes t orders it before any load.
		*(*uint64)(unsafe.Pointer(&t.word)) = word
		if t == first {
			break
		}
	}
	if period == scheduledPeriod {
		first.task.(*scheduledTask).at = deadlineOf(word)
	}
	count, _, _, ok := h.pushTimeouts(first, last, uint32(n))
	if !ok {
		h.unadmit(n) // Stop closed the intake first: never accepted
		h.counters.rejectedStopped.Add(uint64(n))
		return nil, ErrStopped
	}
	h.nudgeWorker(uint64(count), uint64(n))
	if h.watcher != nil {
		h.watcher.Accepted()
	}
	return last, nil
}

// now returns the timer's time, in which deadlines are: its clock in
// nanoseconds since the start.
func (h *HashedWheelTimer) now() int64 { return h.clock.Nanotime() - h.startNanos }

// tickDue returns the tick covering deadline: tick n covers (n·tick,
// (n+1)·tick].
func tickDue(deadline, tick int64) int64 { return (deadline - 1) / tick }

func (t *timeout) Timer() Timer    { return t.timer }
func (t *timeout) Task() TimerTask { return t.task }

// Deadline is the wall clock now plus what remains on the timer's
// monotonic clock: a step of the wall clock moves it, and the task never
// runs before it.
func (t *timeout) Deadline() time.Time {
	return t.timer.clock.Now().Add(t.remaining())
}

// remaining returns the time until the deadline on the timer's clock,
// negative once it has passed.
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
		s := w & stateMask
		if s != stateQueued && s != stateScheduled {
			return false
		}
		if t.word.CompareAndSwap(w, w&^stateMask|stateCancelled) {
			h := t.timer
			// Counted before its place is freed: no snapshot sees more
			// pending than the limit.
			h.counters.cancelled.add(1)
			if h.maxPending > 0 {
				h.admitted.Add(-1)
			}
			if s == stateScheduled {
				h.report(t)
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
	now := h.now()
	for {
		w := t.word.Load()
		s := w & stateMask
		if s != stateQueued && s != stateScheduled {
			return false
		}
		// A periodic run claimed and not yet started, or owed, is revoked:
		// no run starts before the new deadline.
		next := withDeadline(w, now, max(delay, 1)) &^ claimedBit // as NewTimeout's
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
		if s == stateScheduled && tickDue(deadlineOf(next), h.tickNanos) < tickDue(deadlineOf(w), h.tickNanos) {
			h.report(t)
		}
		return true
	}
}

// cancelForStop cancels a timeout on behalf of Stop; it fails if Cancel
// got there first.
func (t *timeout) cancelForStop() bool {
	for {
		w := t.word.Load()
		if s := w & stateMask; s != stateQueued && s != stateScheduled {
			return false
		}
		if t.word.CompareAndSwap(w, w&^stateMask|stateCancelled) {
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

// A timeout's state word holds its deadline and state: Cancel, Reset and
// the worker's claim each decide with one compare-and-swap, and a claim
// that read a deadline fails if a Reset moved it.
//
//	queued ──worker takes it in──▶ scheduled ──worker claims it──▶ expired
//	   │                              │
//	   └──Cancel or Stop──▶ cancelled ◀──Cancel or Stop──┘
//
// Reset rewrites the deadline and keeps the state. A periodic timeout
// stays scheduled: each claim of a run advances its deadline to the next
// run's; claimedBit and runningBit mark a run waiting to start, and
// running. The state is word&stateMask; a transition to s writes
// word&^stateMask|s.
const (
	stateQueued    uint64 = iota // on an intake stack or staged, not yet in a bucket
	stateScheduled               // linked in a bucket by the worker
	stateCancelled               // cancelled; the task will never run
	stateExpired                 // claimed by the worker; the task runs

	stateMask  = 1<<2 - 1
	claimedBit = 1 << 2  // a periodic timeout's run is claimed and waits to start
	runningBit = 1 << 63 // a periodic timeout's run is running
	flagsMask  = stateMask | claimedBit | runningBit

	// The deadline, in 8ns units, fills the 60 bits below runningBit; all
	// ones is math.MaxInt64.
	deadlineShift = 3
	deadlineUnit  = 1 << deadlineShift
	maxDeadlineQ  = 1<<60 - 1
)

// deadlineOf returns the deadline held in word, in nanoseconds after the
// timer's start.
func deadlineOf(word uint64) int64 {
	q := word >> deadlineShift & maxDeadlineQ
	if q == maxDeadlineQ {
		return math.MaxInt64
	}
	return int64(q << deadlineShift)
}

// withDeadline returns word with its deadline replaced by from + delay,
// neither negative, saturating at math.MaxInt64 and rounded up to a
// multiple of 8ns: never earlier.
func withDeadline(word uint64, from int64, delay time.Duration) uint64 {
	d := min(uint64(from)+uint64(delay), math.MaxInt64) // below 2⁶⁴: each is below 2⁶³
	q := min((d+deadlineUnit-1)>>deadlineShift, maxDeadlineQ)
	return q<<deadlineShift | word&flagsMask
}

// timeout is the Timeout of a HashedWheelTimer, and the node of its intake
// stack and bucket list: 64 bytes, one cache line.
type timeout struct {
	timer *HashedWheelTimer
	task  TimerTask
	word  atomic.Uint64 // deadline and state

	// While queued, prev links to the node below on the intake stack,
	// which producers may read (forgetBelow), and seq counts the shard's
	// pushes; next links the staged. In a bucket, next and prev link it:
	// the worker's alone.
	next, prev *timeout
	seq        uint32
	bucket     uint32 // 1 + the index of the bucket that links it; 0 if none

	period int64 // ns between a periodic timeout's runs; scheduledPeriod for ScheduleFunc's; 0 if one-shot
}

// currentState returns the state, without the deadline.
func (t *timeout) currentState() uint64 { return t.word.Load() & stateMask }

// below returns the node below the timeout on its intake stack.
func (t *timeout) below() *timeout {
	return (*timeout)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev))))
}

// forgetBelow clears the link below, atomically for producers reading it,
// so that a caller keeping the timeout keeps nothing else alive.
func (t *timeout) forgetBelow() {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev)), nil)
}

// run runs the claimed timeout's task, the dispatcher's Run: once, or, for
// a periodic one, as its run marks say (see periodic.go).
func (t *timeout) run() {
	if t.period != 0 {
		t.runPeriodic()
	} else {
		t.runTask()
	}
}

// runTask runs the task; a panic or runtime.Goexit in it is counted,
// logged and contained.
func (t *timeout) runTask() {
	returned := false
	defer func() {
		if !returned {
			t.timer.userCodeFailed(userTask, t, recover())
		}
	}()
	switch task := t.task.(type) { // called directly: a frame less under the user's function
	case plainFunc: // AfterFunc's and Every's, the commonest
		task()
	case *scheduledTask:
		task.f()
	default:
		task.Run(t)
	}
	returned = true
}
