package hashedwheel

import (
	"context"
	"time"
)

// Interface is the set of methods of a HashedWheelTimer, for code that
// takes a timer as a dependency: a test hands it a timer on a clock.Fake,
// or a stand-in of its own. Timer, Netty's interface, stays as small as
// Netty's.
type Interface interface {
	Timer
	// Start, AfterFunc, Every, ScheduleFunc, WithTimeout,
	// WithTimeoutCause, WithDeadline, WithDeadlineCause, StopContext,
	// PendingTimeouts, Stats and Now are HashedWheelTimer's; see their
	// documentation there.
	Start() error
	AfterFunc(delay time.Duration, f func()) (Timeout, error)
	Every(period time.Duration, f func()) (Timeout, error)
	ScheduleFunc(s Scheduler, f func()) (Timeout, error)
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
	WithTimeoutCause(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
	WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc)
	WithDeadlineCause(parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc)
	StopContext(ctx context.Context) ([]Timeout, error)
	PendingTimeouts() int64
	Stats() Stats
	// NewTimer, After and NewTicker are HashedWheelTimer's channel
	// timers, time.NewTimer, time.After and time.NewTicker on the wheel.
	NewTimer(delay time.Duration) (*ChanTimer, error)
	After(delay time.Duration) <-chan time.Time
	NewTicker(period time.Duration) (*Ticker, error)
	Now() time.Time
}

var _ Interface = (*HashedWheelTimer)(nil)
