package hashedwheel

import (
	"errors"
	"fmt"
)

var (
	// ErrStopped is returned by Start, NewTimeout, NewTimeouts, AfterFunc,
	// Every, ScheduleFunc, NewTimer and NewTicker once the timer is
	// stopped. The Reset of a ChanTimer or Ticker literal wraps it too; a
	// stopped timer's After, WithTimeout, WithDeadline and channel timers
	// fall back instead.
	ErrStopped = errors.New("hashedwheel: timer stopped")

	// ErrTooManyPendingTimeouts is returned by NewTimeout, NewTimeouts,
	// AfterFunc, Every, ScheduleFunc, NewTimer and NewTicker when the timer
	// already holds the number of pending timeouts set by
	// WithMaxPendingTimeouts (Netty's RejectedExecutionException), or
	// would hold more with those asked for. After, WithTimeout,
	// WithDeadline and channel timers' Resets use the clock's own timers.
	ErrTooManyPendingTimeouts = errors.New("hashedwheel: too many pending timeouts")

	// ErrNilTask is returned by NewTimeout and NewTimeouts for a nil task,
	// and by AfterFunc, Every and ScheduleFunc for a nil function.
	ErrNilTask = errors.New("hashedwheel: nil task")

	// ErrInvalidPeriod is returned by Every, NewTicker and Ticker.Reset
	// for a period ≤ 0 or below the tick.
	ErrInvalidPeriod = errors.New("hashedwheel: invalid period")

	// ErrInvalidSchedule is returned by ScheduleFunc for a nil Scheduler,
	// or one that gives no first run after now.
	ErrInvalidSchedule = errors.New("hashedwheel: invalid schedule")

	// ErrSynctestBubble is wrapped by the error of Start, NewTimeout,
	// NewTimeouts, AfterFunc, Every, ScheduleFunc, NewTimer, NewTicker,
	// ChanTimer.Reset and Ticker.Reset on a timer used inside a
	// testing/synctest bubble it was not made in: make it in the bubble
	// and Stop it there. After, WithTimeout and WithDeadline fall back to
	// the bubble's timers.
	ErrSynctestBubble = errors.New("hashedwheel: timer used in a testing/synctest bubble it was not made in")

	// ErrInvalidOption is wrapped by the error New returns for an option
	// value it cannot use; the message names the option and the value.
	ErrInvalidOption = errors.New("hashedwheel: invalid option")
)

// invalidOption is the error of option name given value.
func invalidOption(name string, value any, expected string) error {
	return fmt.Errorf("%w: %s(%v): expected %s", ErrInvalidOption, name, value, expected)
}

// tooManyPending is the rejection error, naming the limit as Netty does.
func tooManyPending(limit int64) error {
	return fmt.Errorf("%w: the limit is %d", ErrTooManyPendingTimeouts, limit)
}
