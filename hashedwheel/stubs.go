package hashedwheel

import (
	"context"
	"errors"
	"time"
)

// Temporary stand-ins for the API being built; replaced by the real code.

func (t *timeout) Reset(delay time.Duration) bool { return false }

func (h *HashedWheelTimer) Every(period time.Duration, f func()) (Timeout, error) {
	if period <= 0 {
		return nil, errors.New("hashedwheel: Every: period must be positive")
	}
	var arm func()
	var first Timeout
	arm = func() {
		to, err := h.AfterFunc(period, func() { f(); arm() })
		if err == nil && first == nil {
			first = to
		}
	}
	arm()
	return first, nil
}

func (h *HashedWheelTimer) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

func (h *HashedWheelTimer) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, deadline)
}

func (h *HashedWheelTimer) WithTimeoutCause(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, d, cause)
}

func (h *HashedWheelTimer) WithDeadlineCause(parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc) {
	return context.WithDeadlineCause(parent, deadline, cause)
}

func (h *HashedWheelTimer) StopContext(ctx context.Context) ([]Timeout, error) {
	return h.Stop(), ctx.Err()
}
