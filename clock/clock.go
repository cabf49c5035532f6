// Package clock is the time source of a hashedwheel timer: Real, the
// runtime's clock, by default, or a Fake that a test moves by hand, so that
// a test of code waiting 30 minutes for a timeout takes microseconds and
// gives the same result every time.
//
// Give a timer a Fake with hashedwheel.WithClock; Fake.Advance then moves
// the time and returns once every timer on the clock has run what came due.
package clock

import (
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clockwork"
)

// Clock is a time source: a wall clock, and a monotonic one that a step of
// the wall clock never affects. Only *Real, *Fake and the types that embed
// one of them (or a Clock) implement it: a custom clock, such as a test's
// whose Now steps the wall clock, embeds *Real or *Fake and overrides Now.
// Its timers sleep on the embedded clock's monotonic time, so a custom
// clock keeps the embedded Nanotime.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
	// Nanotime returns the nanoseconds elapsed since a fixed origin, on a
	// monotonic scale: it never decreases. A timer measures every delay
	// with it.
	Nanotime() int64
	// newSleeper returns what a timer's worker waits on, bound to this
	// clock, for one goroutine. Unexported, so that only Real and Fake,
	// and what embeds them, implement Clock.
	newSleeper() clockwork.Sleeper
}

// Real is the runtime's clock.
type Real struct{ origin time.Time }

// NewReal returns the runtime's clock, with the origin of Nanotime now.
func NewReal() *Real { return &Real{origin: time.Now()} }

// Now returns time.Now().
func (r *Real) Now() time.Time { return time.Now() }

// Nanotime returns the monotonic nanoseconds since the clock was made.
func (r *Real) Nanotime() int64 { return int64(time.Since(r.origin)) }

// newSleeper returns a sleeper that waits on a runtime timer.
func (r *Real) newSleeper() clockwork.Sleeper {
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
	if until == clockwork.Forever {
		<-s.wake
		return
	}
	d := time.Duration(until - s.clock.Nanotime())
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
