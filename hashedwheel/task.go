package hashedwheel

import (
	"time"
)

// TimerTask is the work a Timer runs when a Timeout expires. Run is called
// at most once per Timeout, never before its deadline, on a goroutine of
// the executor; a panic in Run is recovered and logged. A TimerTask may
// also implement Cancelled(timeout Timeout), called once a successful
// Cancel is processed, on the worker: it must return quickly.
type TimerTask interface {
	Run(timeout Timeout)
}

// TaskFunc adapts an ordinary function to the TimerTask interface.
type TaskFunc func(timeout Timeout)

// Run calls f(timeout).
func (f TaskFunc) Run(timeout Timeout) { f(timeout) }

// plainFunc is the TimerTask of AfterFunc and Every, a func() of no Timeout.
type plainFunc func()

func (f plainFunc) Run(Timeout) { f() }

// cancelledHook is TimerTask's optional Cancelled hook.
type cancelledHook interface {
	Cancelled(timeout Timeout)
}

// Timeout is the handle of one scheduled TimerTask, returned by
// Timer.NewTimeout. All its methods are safe for concurrent use.
type Timeout interface {
	Timer() Timer    // the Timer that created this Timeout
	Task() TimerTask // the TimerTask scheduled
	// Deadline returns the earliest time the task may run, the wall clock
	// now plus what remains; a periodic timeout's next run's once claimed.
	Deadline() time.Time
	// IsExpired reports whether the timer has claimed the task for
	// running.
	IsExpired() bool
	// IsCancelled reports whether Cancel or Timer.Stop cancelled it.
	IsCancelled() bool
	// Cancel prevents the task from running, and returns true for the one
	// call that cancelled the timeout, false if it had expired or been
	// cancelled; a periodic run in progress completes. It never blocks;
	// the timer releases the timeout by the end of the next tick.
	Cancel() bool
	// Reset moves the deadline of a timeout neither expired nor cancelled
	// to now + delay, clamped as NewTimeout does, and returns true: no run
	// starts before it, a periodic run claimed but not started included,
	// until a later Reset or Cancel. A run already in progress may still
	// reach its first line after Reset returns (docs/guarantees.md,
	// Stats.ResetsDuringRun). Otherwise Reset returns false and changes
	// nothing. It never blocks; pushing a deadline later allocates
	// nothing.
	Reset(delay time.Duration) bool
}

// Timer schedules TimerTasks to run once after a delay: Netty's
// io.netty.util.Timer.
type Timer interface {
	// NewTimeout schedules task to run once after delay. It fails with
	// ErrNilTask, ErrStopped or ErrTooManyPendingTimeouts.
	NewTimeout(task TimerTask, delay time.Duration) (Timeout, error)
	// Stop stops the timer and returns the timeouts that had neither
	// expired nor been cancelled, each now cancelled; later calls, nil.
	Stop() []Timeout
}

// Scheduler gives the times at which ScheduleFunc runs a function: Next
// returns the first after its argument, a wall-clock time, or the zero
// time to end the runs. robfig/cron/v3's Schedule is one. Next runs on the
// worker goroutine: it must return quickly and not block.
type Scheduler interface {
	Next(time.Time) time.Time
}
