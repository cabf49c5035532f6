// Package clock abstracts the monotonic time source and the sleeping of the
// timer's worker, so that tests can drive the wheel with a fake clock,
// deterministically.
package clock

import (
	"math"
	"time"
)

// Forever is the instant a Sleeper waits for when only Wake may end the
// sleep.
const Forever = int64(math.MaxInt64)

// Clock is a monotonic time source. A wall-clock step never affects it.
type Clock interface {
	// Now returns nanoseconds elapsed since an arbitrary fixed origin. It
	// never decreases.
	Now() int64
	// NewSleeper returns a Sleeper bound to this clock.
	NewSleeper() Sleeper
}

// Sleeper blocks one goroutine until an instant of its Clock or until
// another goroutine calls Wake.
type Sleeper interface {
	// Sleep returns once Now() >= until or Wake has been called since the
	// previous Sleep returned. It may also return early for no reason, so
	// callers re-check their condition.
	Sleep(until int64)
	// Wake ends the current Sleep, or makes the next one return at once.
	// It never blocks and is safe for concurrent use.
	Wake()
	// Close releases the sleeper; it must not be used afterwards.
	Close()
}

// Real is the runtime's monotonic clock.
type Real struct{ origin time.Time }

// NewReal returns the runtime's monotonic clock, with its origin now.
func NewReal() *Real { return &Real{origin: time.Now()} }

// Now returns the monotonic nanoseconds since the clock was made.
func (r *Real) Now() int64 { return int64(time.Since(r.origin)) }

// NewSleeper returns a Sleeper that waits on a runtime timer.
func (r *Real) NewSleeper() Sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &realSleeper{clock: r, timer: t, wake: make(chan struct{}, 1)}
}

type realSleeper struct {
	clock *Real
	timer *time.Timer
	wake  chan struct{}
}

func (s *realSleeper) Sleep(until int64) {
	if until == Forever {
		<-s.wake
		return
	}
	d := time.Duration(until - s.clock.Now())
	if d <= 0 {
		return
	}
	// Since Go 1.23 Reset discards a stale expiry, so no draining is needed.
	s.timer.Reset(d)
	select {
	case <-s.timer.C:
	case <-s.wake:
		s.timer.Stop()
	}
}

func (s *realSleeper) Close() { s.timer.Stop() }

func (s *realSleeper) Wake() {
	select {
	case s.wake <- struct{}{}:
	default: // a wake is already pending
	}
}
