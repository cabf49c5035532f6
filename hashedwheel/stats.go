package hashedwheel

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Stats is a snapshot of a timer's counters. The totals only grow. Every
// snapshot balances: Scheduled = Pending + Expired + Cancelled +
// ReturnedByStop, and Pending is never negative nor, with
// WithMaxPendingTimeouts, more than the limit.
type Stats struct {
	// Pending is PendingTimeouts: scheduled, and neither expired,
	// cancelled nor returned by Stop. A periodic timeout counts once.
	Pending int64
	// Scheduled counts the timeouts the timer accepted: those of
	// NewTimeout, AfterFunc, Every and ScheduleFunc, and one for each
	// context of WithTimeout, WithDeadline and their Cause forms that a
	// timeout of the wheel keeps; not a context done at once, one whose
	// parent's deadline comes first, nor one counted in ContextFallbacks.
	Scheduled uint64
	// Expired counts the timeouts claimed for running.
	Expired uint64
	// Cancelled counts the Cancels that returned true, and the timeouts of
	// the contexts and channel timers that Stop moved to the clock's own
	// timers.
	Cancelled uint64
	// ReturnedByStop counts the timeouts Stop cancelled and returned.
	ReturnedByStop uint64
	// Resets counts the Resets that returned true.
	Resets uint64
	// ResetsDuringRun counts those of them that found a run of their
	// periodic timeout in progress: started by the timer, it completes,
	// and its function may reach its first line after Reset returned
	// (docs/guarantees.md bounds that window).
	ResetsDuringRun uint64
	// PeriodicRuns counts the runs of periodic timeouts started, and
	// PeriodicSkipped those not started: due while another run of the same
	// timeout waited to start, revoked by a Reset, or missed by a worker
	// late by a period. A schedule of ScheduleFunc whose wall clock stepped
	// past many runs counts at most 1000 of them a claim: beyond, its
	// Scheduler is asked for the first run after now, and the runs between
	// are not counted.
	PeriodicRuns    uint64
	PeriodicSkipped uint64
	// ScheduleErrors counts the schedules of ScheduleFunc ended because
	// their Scheduler's Next returned a time not after its argument, or
	// panicked.
	ScheduleErrors uint64
	// RejectedFull counts the timeouts refused at the
	// WithMaxPendingTimeouts limit: the calls of NewTimeout, AfterFunc,
	// Every, ScheduleFunc, NewTimer and NewTicker that failed with
	// ErrTooManyPendingTimeouts, and the contexts and channel timer
	// armings that then fell back (also in ContextFallbacks and
	// ChanFallbacks).
	RejectedFull uint64
	// RejectedStopped counts the timeouts refused because the timer was
	// stopped: the calls of NewTimeout, AfterFunc, Every, ScheduleFunc,
	// NewTimer and NewTicker that failed with ErrStopped, and the contexts
	// and channel timer armings that then fell back (also in
	// ContextFallbacks and ChanFallbacks).
	RejectedStopped uint64
	// ExecutorFailures counts the times the executor refused expired tasks
	// or panicked taking them; they then ran on a goroutine of their own.
	ExecutorFailures uint64
	// ContextFallbacks counts the contexts made by WithDeadline whose
	// deadline a timer of the clock's own (the runtime's, or a
	// clock.Fake's) keeps instead of the wheel: made while the timer was
	// stopped or at its pending limit, or live at Stop.
	ContextFallbacks uint64
	// ChanFallbacks counts the same for channel timers: the armings of
	// After, ChanTimer.Reset and Ticker.Reset made while the timer was
	// stopped or at its pending limit, and those live at Stop.
	ChanFallbacks uint64
	// TaskPanics counts the tasks that panicked, and HookPanics the
	// Cancelled hooks that did; Goexits counts the tasks and hooks that
	// called runtime.Goexit. Each is logged, naming the task.
	TaskPanics uint64
	HookPanics uint64
	Goexits    uint64
	// Ticks counts the ticks the worker has processed; it sleeps through
	// ticks with nothing due.
	Ticks uint64
	// MaxTickLag is the longest the worker has been late for a tick: how
	// long after the end of a tick it was due to process, with or without
	// anything due in it, it started: a Cancelled hook, Scheduler or
	// pool.Inline task that held it up, a process short of CPU, a burst of
	// scheduling (a tick moves up to 100 000 new timeouts into the wheel,
	// which takes milliseconds).
	MaxTickLag time.Duration
	// LatenessP50 and LatenessP99 are the median and 99th percentile of
	// how late tasks started after their deadlines since the timer
	// started, to within 19% above (Lateness has the histograms), and
	// MaxLateness the longest; a task starts up to a tick late by design.
	LatenessP50, LatenessP99, MaxLateness time.Duration
	// MaxHandOffWait is the longest a task waited for a goroutine of the
	// executor after the worker handed it over: held by slow tasks of this
	// timer, or of others sharing the executor.
	MaxHandOffWait time.Duration
}

// String formats the snapshot as key=value pairs, for logs, named as
// StatsFields names them, MaxTickLag as a Duration.
func (s Stats) String() string {
	var b strings.Builder
	for i, f := range StatsFields() {
		if i > 0 {
			b.WriteByte(' ')
		}
		if f.Unit == "s" {
			fmt.Fprintf(&b, "%s=%v", f.Name, time.Duration(math.Round(f.Value(s)*float64(time.Second))))
		} else {
			fmt.Fprintf(&b, "%s=%d", f.Name, int64(f.Value(s)))
		}
	}
	return b.String()
}

// Stats returns a snapshot of the timer's counters. It takes no lock and
// costs under a microsecond, so it can be polled often.
func (h *HashedWheelTimer) Stats() Stats {
	c := &h.counters
	snap := h.snapshot()
	s := Stats{
		Pending:          snap.pending,
		Scheduled:        snap.accepted,
		Expired:          snap.expired,
		Cancelled:        snap.cancelled,
		ReturnedByStop:   snap.returned,
		ResetsDuringRun:  c.resetsDuringRun.Load(),
		PeriodicRuns:     c.periodicRuns.Load(),
		PeriodicSkipped:  c.periodicSkipped.Load(),
		ScheduleErrors:   c.scheduleErrors.Load(),
		RejectedFull:     c.rejectedFull.Load(),
		RejectedStopped:  c.rejectedStopped.Load(),
		ExecutorFailures: c.executorFailures.Load(),
		ContextFallbacks: c.contextFallbacks.Load(),
		ChanFallbacks:    c.chanFallbacks.Load(),
		TaskPanics:       c.taskPanics.Load(),
		HookPanics:       c.hookPanics.Load(),
		Goexits:          c.goexits.Load(),
		Ticks:            c.ticks.Load(),
		MaxTickLag:       time.Duration(c.maxTickLag.Load()),
	}
	l := h.Lateness()
	s.LatenessP50, s.LatenessP99, s.MaxLateness = l.Total.Quantile(0.5), l.Total.Quantile(0.99), l.Total.Max
	s.MaxHandOffWait = l.HandOff.Max
	s.Resets = c.resets.load()
	return s
}

// pendingSnapshot is a balanced reading of the pending count.
type pendingSnapshot struct {
	pending                      int64
	accepted                     uint64
	expired, cancelled, returned uint64
}

// snapshotAttempts bounds the readings snapshot makes while the worker
// keeps counting; the last one is then made to balance.
const snapshotAttempts = 100

// snapshot reads the processed counts, the accepted count and the
// processed counts again, until nothing was processed in between: the
// pending count is then exact for an instant within the reading. Every
// pending timeout holds a place under the limit until after it is counted
// processed, so the count never exceeds the limit. Should the worker keep
// counting through every attempt, the last reading is clamped to the
// limit and balanced.
func (h *HashedWheelTimer) snapshot() pendingSnapshot {
	c := &h.counters
	var s pendingSnapshot
	// Before the start nothing is pending, and a zero HashedWheelTimer's
	// fields are being set by its first NewTimeout: read none of them. Once
	// the state says started or stopped, they are all set.
	if h.state.Load() == timerInit {
		return s
	}
	processed := func() uint64 {
		s.expired, s.cancelled, s.returned = c.expired.Load(), c.cancelled.load(), c.returnedByStop.Load()
		return s.expired + s.cancelled + s.returned
	}
	for attempt := 1; ; attempt++ {
		before := processed()
		s.accepted = h.accepted()
		if after := processed(); after == before || attempt == snapshotAttempts {
			s.pending = int64(s.accepted - after)
			break
		}
	}
	s.pending = max(s.pending, 0)
	if h.maxPending > 0 {
		s.pending = min(s.pending, h.maxPending)
	}
	s.accepted = s.expired + s.cancelled + s.returned + uint64(s.pending)
	return s
}

// counters are the timer's statistics. The worker writes most of them;
// producers write the rejections, Cancel and Reset their own counts.
type counters struct {
	expired          atomic.Uint64
	returnedByStop   atomic.Uint64
	cancelled        stripedCounter // added to by every Cancel that succeeds, on any core
	periodicRuns     atomic.Uint64
	periodicSkipped  atomic.Uint64
	scheduleErrors   atomic.Uint64
	rejectedFull     atomic.Uint64
	rejectedStopped  atomic.Uint64
	executorFailures atomic.Uint64
	contextFallbacks atomic.Uint64
	chanFallbacks    atomic.Uint64
	taskPanics       atomic.Uint64
	hookPanics       atomic.Uint64
	goexits          atomic.Uint64
	ticks            atomic.Uint64
	maxTickLag       atomic.Int64
	resets           stripedCounter // added to by every Reset, on any core
	resetsDuringRun  atomic.Uint64  // Resets that found a periodic run in progress
}

// counterStripes is the number of stripes of a stripedCounter.
const (
	counterStripesLog2 = 6
	counterStripes     = 1 << counterStripesLog2
)

// stripedCounter is a counter that goroutines on many cores add to at once:
// each adds to a stripe chosen by the address of its own stack, so that two
// goroutines seldom write the same cache line.
type stripedCounter struct {
	stripes [counterStripes]struct {
		n atomic.Uint64
		_ [2*cacheLine - 8]byte // processors fetch lines in adjacent pairs
	}
}

// cacheLine is the size of a cache line on the processors Go runs on most.
const cacheLine = 64

// add counts n.
func (c *stripedCounter) add(n uint64) {
	// The stripe is a hash of where the caller's stack is: goroutines'
	// stacks lie apart, and a goroutine's stays put unless it grows, so
	// the stripe is stable enough and costs no lookup.
	var here byte
	c.stripes[(uintptr(unsafe.Pointer(&here))>>10*0x9e3779b97f4a7c15)>>(64-counterStripesLog2)].n.Add(n)
}

// load returns the count.
func (c *stripedCounter) load() uint64 {
	var n uint64
	for i := range c.stripes {
		n += c.stripes[i].n.Load()
	}
	return n
}

// countCancelled counts n cancellations and releases their places under
// the pending limit, in that order, so that a snapshot never finds more
// pending timeouts than the limit. A Cancel that succeeds counts its own:
// its place is free when it returns.
func (h *HashedWheelTimer) countCancelled(n int) {
	h.counters.cancelled.add(uint64(n))
	if h.maxPending > 0 {
		h.admitted.Add(-int64(n))
	}
}
