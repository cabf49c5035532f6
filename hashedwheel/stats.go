package hashedwheel

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a timer's counters. The totals only grow. Once the
// timer is quiet, Scheduled = Pending + Expired + Cancelled + ReturnedByStop.
type Stats struct {
	// Pending is PendingTimeouts: scheduled, and neither expired nor with a
	// processed cancellation.
	Pending int64
	// Scheduled counts the timeouts NewTimeout and AfterFunc accepted.
	Scheduled uint64
	// Expired counts the timeouts claimed for running.
	Expired uint64
	// Cancelled counts the processed cancellations made with Cancel.
	Cancelled uint64
	// ReturnedByStop counts the timeouts Stop cancelled and returned.
	ReturnedByStop uint64
	// RejectedFull counts NewTimeout calls that failed with
	// ErrTooManyPendingTimeouts.
	RejectedFull uint64
	// RejectedStopped counts NewTimeout calls that failed with ErrStopped.
	RejectedStopped uint64
	// ExecutorFailures counts the batches of expired tasks the executor
	// refused; each ran on a goroutine of its own instead.
	ExecutorFailures uint64
	// Ticks counts the ticks the worker has processed.
	Ticks uint64
	// MaxTickLag is the longest the worker has been late for a tick: how
	// long after a tick ended the worker started processing it. It grows
	// when the process is short of CPU, and after bursts of scheduling: a
	// tick moves up to 100 000 new timeouts into the wheel, which takes
	// milliseconds.
	MaxTickLag time.Duration
}

// Stats returns a snapshot of the timer's counters. It takes no lock and
// costs about as much as PendingTimeouts, so it can be polled often.
func (h *HashedWheelTimer) Stats() Stats {
	c := &h.counters
	s := Stats{
		Expired:          c.expired.Load(),
		Cancelled:        c.cancelled.Load(),
		ReturnedByStop:   c.returnedByStop.Load(),
		RejectedFull:     c.rejectedFull.Load(),
		RejectedStopped:  c.rejectedStopped.Load(),
		ExecutorFailures: c.executorFailures.Load(),
		Ticks:            c.ticks.Load(),
		MaxTickLag:       time.Duration(c.maxTickLag.Load()),
	}
	// Read after the processed counts, so that Pending is never negative.
	s.Scheduled = h.scheduled()
	s.Pending = h.pending(s.Expired+s.Cancelled+s.ReturnedByStop, s.Scheduled)
	return s
}

// counters are the timer's statistics. The worker writes most of them;
// producers write only the rejections.
type counters struct {
	expired          atomic.Uint64
	cancelled        atomic.Uint64
	returnedByStop   atomic.Uint64
	rejectedFull     atomic.Uint64
	rejectedStopped  atomic.Uint64
	executorFailures atomic.Uint64
	ticks            atomic.Uint64
	maxTickLag       atomic.Int64
}

// processed returns the number of timeouts that left the pending set.
func (c *counters) processed() uint64 {
	return c.expired.Load() + c.cancelled.Load() + c.returnedByStop.Load()
}

// pending returns the pending count from processed and scheduled, which
// must be read in that order so that it is never negative.
func (h *HashedWheelTimer) pending(processed, scheduled uint64) int64 {
	if h.state.Load() == timerStopped {
		return 0
	}
	return int64(scheduled - processed)
}
