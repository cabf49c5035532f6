package hashedwheel

import (
	"time"
)

// TimerTask is the work a Timer runs when a Timeout expires.
//
// Run is called at most once per Timeout, never before the Timeout's
// deadline, on the goroutine the timer's executor chooses. A panic in Run is
// recovered and logged with its stack; it does not affect the timer or
// other tasks.
//
// A TimerTask may also implement
//
//	Cancelled(timeout Timeout)
//
// to be told, once, when a successful Cancel of one of its timeouts has been
// processed by the timer (Netty 4.2's TimerTask.cancelled). The hook runs on
// the timer's worker goroutine and must return quickly.
type TimerTask interface {
	Run(timeout Timeout)
}

// TaskFunc adapts an ordinary function to the TimerTask interface.
type TaskFunc func(timeout Timeout)

// Run calls f(timeout).
func (f TaskFunc) Run(timeout Timeout) { f(timeout) }

// funcTask is the TimerTask of AfterFunc. A func converts to an
// interface without allocating.
type funcTask func()

func (f funcTask) Run(Timeout) { f() }

// cancelledHook is the optional interface a TimerTask implements to learn of
// the processing of its timeout's cancellation.
type cancelledHook interface {
	Cancelled(timeout Timeout)
}

// Timeout is the handle of one scheduled TimerTask, returned by
// Timer.NewTimeout. All its methods are safe for concurrent use.
type Timeout interface {
	// Timer returns the Timer that created this Timeout.
	Timer() Timer
	// Task returns the TimerTask scheduled by this Timeout.
	Task() TimerTask
	// Deadline returns the earliest time at which the task may run: the
	// wall clock now plus what remains until the deadline, which the timer
	// keeps on its monotonic clock, so that a step of the wall clock moves
	// it as it moves the time. The task never runs before it. A periodic
	// timeout's is its next run's once the run due is claimed.
	Deadline() time.Time
	// IsExpired reports whether the timer has claimed the timeout for
	// running: its task has been handed to the executor or is about to be.
	IsExpired() bool
	// IsCancelled reports whether the timeout was cancelled, by Cancel or by
	// Timer.Stop.
	IsCancelled() bool
	// Cancel prevents the task from running. It returns true for the one
	// call that cancelled the timeout and false if the timeout had already
	// expired or been cancelled; after it returned true, no run starts, but
	// a periodic run already in progress completes. It never blocks; the
	// timer releases the timeout's memory by the end of the next tick.
	Cancel() bool
	// Reset moves the deadline of a timeout that has neither expired nor
	// been cancelled to now + delay, clamped as NewTimeout clamps it, and
	// returns true: the task then runs once, at the first tick end at or after
	// the new deadline, never before it. Otherwise it changes nothing and
	// returns false, and the caller schedules anew. A Reset that returned
	// true holds until a later successful Reset or Cancel: no run starts
	// before its deadline, a periodic timeout's run claimed and not yet
	// started included, except a run already in progress. That run is one
	// the timer started before Reset took effect: its function may still
	// reach its first line after Reset returned, as soon as its goroutine
	// is scheduled (docs/guarantees.md gives the bound measured), and
	// Stats.ResetsDuringRun counts the Resets that found one. Reset never
	// blocks; pushing a deadline later, as a heartbeat does, allocates
	// nothing.
	Reset(delay time.Duration) bool
}

// Timer schedules TimerTasks to run once after a delay. It is the Go form of
// Netty's io.netty.util.Timer.
type Timer interface {
	// NewTimeout schedules task to run once after delay. A zero or negative
	// delay runs it on the next tick. It fails with ErrNilTask,
	// ErrStopped or ErrTooManyPendingTimeouts, and a failed call schedules
	// nothing.
	NewTimeout(task TimerTask, delay time.Duration) (Timeout, error)
	// Stop stops the timer and returns the timeouts that had neither
	// expired nor been cancelled, each now cancelled. Later calls return
	// nil.
	Stop() []Timeout
}

// Scheduler gives the times at which ScheduleFunc runs a function. Next
// returns the first time after its argument at which to run, or the zero
// time to end the runs. The Schedule of github.com/robfig/cron/v3 has this
// method, so a cron expression can drive a timer.
//
// The timer calls Next on its worker goroutine, as it calls a Cancelled
// hook: it must return quickly and must not block. Its argument is a
// wall-clock time: the time named for the run just claimed.
type Scheduler interface {
	Next(time.Time) time.Time
}
