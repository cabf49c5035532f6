package hashedwheel

import (
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Stats is a snapshot of a timer's counters. The totals only grow. Every
// snapshot balances: Scheduled = Pending + Expired + Cancelled +
// ReturnedByStop, and 0 ≤ Pending ≤ the WithMaxPendingTimeouts limit.
type Stats struct {
	Pending   int64  // PendingTimeouts
	Scheduled uint64 // timeouts accepted, of contexts too while the wheel keeps their deadline
	Expired   uint64 // timeouts claimed for running
	// Cancelled counts the Cancels that returned true, and the contexts
	// and channel timers Stop moved to the clock's own timers.
	Cancelled       uint64
	ReturnedByStop  uint64 // timeouts Stop cancelled and returned
	Resets          uint64 // Resets that returned true
	ResetsDuringRun uint64 // of them, those that found a periodic run in progress
	PeriodicRuns    uint64 // runs of periodic timeouts started
	// PeriodicSkipped counts the runs not started: due while another
	// waited, revoked by a Reset, or missed by a late worker.
	PeriodicSkipped  uint64
	ScheduleErrors   uint64        // schedules ended by a Next that failed
	RejectedFull     uint64        // timeouts refused at the pending limit, fallbacks included
	RejectedStopped  uint64        // timeouts refused by a stopped timer, fallbacks included
	ExecutorFailures uint64        // executor refusals and panics; the tasks ran on a goroutine of their own
	ContextFallbacks uint64        // contexts whose deadline a timer of the clock's own keeps
	ChanFallbacks    uint64        // channel timer armings a timer of the clock's own keeps
	TaskPanics       uint64        // tasks that panicked
	HookPanics       uint64        // Cancelled hooks that panicked
	Goexits          uint64        // tasks and hooks that called runtime.Goexit
	Ticks            uint64        // ticks processed
	MaxTickLag       time.Duration // the longest the worker started a tick late
	// LatenessP50 and LatenessP99 are quantiles of how late tasks started
	// after their deadlines, to within 19% above (see Lateness), and
	// MaxLateness the longest.
	LatenessP50, LatenessP99, MaxLateness time.Duration
	// MaxHandOffWait is the longest a task waited for an executor
	// goroutine.
	MaxHandOffWait time.Duration
}

// String formats the snapshot as key=value pairs named as in StatsFields.
func (s Stats) String() string {
	var b strings.Builder
	v := reflect.ValueOf(s)
	for i, f := range StatsFields() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%v", f.Name, v.Field(i)) // a duration as time.Duration formats it
	}
	return b.String()
}

// Stats returns a snapshot of the timer's counters. It takes no lock, so
// it can be polled often.
func (h *HashedWheelTimer) Stats() Stats {
	c := &h.counters
	s := h.balanced()
	s.ResetsDuringRun = c.resetsDuringRun.Load()
	s.PeriodicRuns = c.periodicRuns.Load()
	s.PeriodicSkipped = c.periodicSkipped.Load()
	s.ScheduleErrors = c.scheduleErrors.Load()
	s.RejectedFull = c.rejectedFull.Load()
	s.RejectedStopped = c.rejectedStopped.Load()
	s.ExecutorFailures = c.executorFailures.Load()
	s.ContextFallbacks = c.contextFallbacks.Load()
	s.ChanFallbacks = c.chanFallbacks.Load()
	s.TaskPanics = c.taskPanics.Load()
	s.HookPanics = c.hookPanics.Load()
	s.Goexits = c.goexits.Load()
	s.Ticks = c.ticks.Load()
	s.MaxTickLag = time.Duration(c.maxTickLag.Load())
	l := h.Lateness()
	s.LatenessP50, s.LatenessP99, s.MaxLateness = l.Total.Quantile(0.5), l.Total.Quantile(0.99), l.Total.Max
	s.MaxHandOffWait = l.HandOff.Max
	s.Resets = c.resets.load()
	return s
}

const snapshotAttempts = 100

// balanced returns the counts of a Stats that balance: it reads the
// processed counts, the accepted count and the processed counts again,
// until nothing was processed in between: the pending count is then exact
// at an instant, within the limit, as a place under it is freed after the
// count. Else the last reading is clamped.
func (h *HashedWheelTimer) balanced() Stats {
	c := &h.counters
	var s Stats
	// Before the start, a zero HashedWheelTimer's fields may be being set.
	if h.state.Load() == timerInit {
		return s
	}
	processed := func() uint64 {
		s.Expired, s.Cancelled, s.ReturnedByStop = c.expired.Load(), c.cancelled.load(), c.returnedByStop.Load()
		return s.Expired + s.Cancelled + s.ReturnedByStop
	}
	for attempt := 1; ; attempt++ {
		before := processed()
		s.Scheduled = h.accepted()
		if after := processed(); after == before || attempt == snapshotAttempts {
			s.Pending = int64(s.Scheduled - after)
			break
		}
	}
	s.Pending = max(s.Pending, 0)
	if h.maxPending > 0 {
		s.Pending = min(s.Pending, h.maxPending)
	}
	s.Scheduled = s.Expired + s.Cancelled + s.ReturnedByStop + uint64(s.Pending)
	return s
}

// counters are the timer's statistics, written mostly by the worker.
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

const (
	counterStripesLog2 = 6
	counterStripes     = 1 << counterStripesLog2
	cacheLine          = 64
)

// stripedCounter is a counter that goroutines on many cores add to at
// once, each to a stripe chosen by its stack's address, so that two seldom
// write the same cache line.
type stripedCounter struct {
	stripes [counterStripes]struct {
		n atomic.Uint64
		_ [2*cacheLine - 8]byte // processors fetch lines in adjacent pairs
	}
}

func (c *stripedCounter) add(n uint64) {
	// A goroutine's stack stays put unless it grows: a stable stripe, no
	// lookup.
	var here byte
	c.stripes[(uintptr(unsafe.Pointer(&here))>>10*0x9e3779b97f4a7c15)>>(64-counterStripesLog2)].n.Add(n)
}

func (c *stripedCounter) load() uint64 {
	var n uint64
	for i := range c.stripes {
		n += c.stripes[i].n.Load()
	}
	return n
}
