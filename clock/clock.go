// Package clock is the time source of a hashedwheel timer, and of the
// application code around it: Real, the runtime's clock, by default, or a
// Fake that a test moves by hand, so that a test of code waiting 30
// minutes for a timeout takes microseconds and gives the same result
// every time.
//
// Give a timer a Fake with hashedwheel.WithClock; Fake.Advance then moves
// the time and returns once every timer on the clock has run what came due.
// Code that sleeps or waits on a channel takes a Clock and calls its
// Sleep, After, NewTimer, NewTicker, AfterFunc, Since and Until, which are
// the time package's on a Real and follow the fake on a Fake, as
// clockwork's and benbjohnson/clock's fakes do.
package clock

import (
	"errors"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clockwork"
)

// Clock is a time source: a wall clock, a monotonic one that a step of
// the wall clock never affects, and the time package's ways to wait on
// them, for application code. Only *Real, *Fake and the types that embed
// one of them (or a Clock) implement it: a custom clock, such as a test's
// whose Now steps the wall clock, embeds *Real or *Fake and overrides Now.
// Its timers sleep on the embedded clock's monotonic time, and its other
// methods are the embedded clock's, so a custom clock keeps the embedded
// Nanotime.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
	// Nanotime returns the nanoseconds elapsed since a fixed origin, on a
	// monotonic scale: it never decreases. A timer measures every delay
	// with it.
	Nanotime() int64
	// Since returns the time elapsed since t: Now().Sub(t).
	Since(t time.Time) time.Duration
	// Until returns the duration until t: t.Sub(Now()).
	Until(t time.Time) time.Duration
	// Sleep blocks the calling goroutine until the clock has moved d
	// ahead; it returns at once for d <= 0.
	Sleep(d time.Duration)
	// After returns NewTimer(d).C.
	After(d time.Duration) <-chan time.Time
	// NewTimer returns a Timer that sends the time on its channel once
	// the clock has moved d ahead, as time.NewTimer does.
	NewTimer(d time.Duration) *Timer
	// NewTicker returns a Ticker that sends the time on its channel every
	// d, as time.NewTicker does; it panics for d <= 0, as time.NewTicker
	// does.
	NewTicker(d time.Duration) *Ticker
	// AfterFunc calls f once the clock has moved d ahead: on a goroutine
	// of its own on a Real, as time.AfterFunc does; on a Fake, on the
	// goroutine of the Advance or Jump that gets it there. The returned
	// stop prevents the call, reporting whether it did, as time.Timer's
	// Stop.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
	// Sleeper returns what a hashedwheel timer's worker sleeps on, bound
	// to this clock, or an error for a clock that cannot keep time: the
	// zero Fake, or a nil one embedded in a custom clock. Its type is
	// internal to the module, so that only Real and Fake, and what embeds
	// them, implement Clock; application code has no use for it.
	Sleeper() (clockwork.Sleeper, error)
}

// Real is the runtime's clock. Make it with NewReal; the zero Real works
// too, its Nanotime counting from the start of the program.
type Real struct{ origin time.Time }

// processStart is the origin of a zero Real's Nanotime.
var processStart = time.Now()

// NewReal returns the runtime's clock, with the origin of Nanotime now.
func NewReal() *Real { return &Real{origin: time.Now()} }

// Now returns time.Now().
func (r *Real) Now() time.Time { return time.Now() }

// Nanotime returns the monotonic nanoseconds since the clock was made, or,
// for the zero Real, since the program started.
func (r *Real) Nanotime() int64 {
	origin := r.origin
	if origin.IsZero() {
		origin = processStart
	}
	return int64(time.Since(origin))
}

// Sleeper returns a sleeper that waits on a runtime timer, for a
// hashedwheel timer's worker; it refuses a nil Real, which a custom clock
// can embed.
func (r *Real) Sleeper() (clockwork.Sleeper, error) {
	if r == nil {
		return nil, errors.New("clock: a nil *clock.Real: make one with clock.NewReal")
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &realSleeper{clock: r, timer: t, wake: make(chan struct{}, 1)}, nil
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
