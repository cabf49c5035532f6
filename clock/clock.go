// Package clock is the time source of a hashedwheel timer: Real, the
// runtime's clock, by default, or a Fake that a test moves by hand, so that
// a test of code waiting 30 minutes for a timeout takes microseconds and
// gives the same result every time.
//
// Give a timer a Fake with hashedwheel.WithClock; Fake.Advance then moves
// the time and returns once every timer on the clock has run what came due.
package clock

import (
	"math"
	"time"
)

// Forever is the instant a Sleeper waits for when only Wake may end the
// sleep.
const Forever = int64(math.MaxInt64)

// Clock is a time source: a wall clock, and a monotonic one that a step of
// the wall clock never affects. Real and *Fake implement it.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
	// Nanotime returns the nanoseconds elapsed since a fixed origin, on a
	// monotonic scale: it never decreases. A timer measures every delay
	// with it.
	Nanotime() int64
	// NewSleeper returns a Sleeper bound to this clock, for one goroutine.
	NewSleeper() Sleeper
}

// Sleeper blocks one goroutine until an instant of its Clock, as read by
// Nanotime, or until another goroutine calls Wake.
type Sleeper interface {
	// Sleep returns once Nanotime() >= until or Wake has been called since
	// the previous Sleep returned. It may also return early for no reason,
	// so callers re-check their condition.
	Sleep(until int64)
	// Wake ends the current Sleep, or makes the next one return at once.
	// It never blocks and is safe for concurrent use.
	Wake()
	// Close releases the sleeper; it must not be used afterwards.
	Close()
}

// WorkTracker is implemented by the Sleepers of a Fake. A timer reports
// through it the tasks it has handed to its executor, and their return, so
// that Fake.Settle and Fake.Advance wait for them too.
type WorkTracker interface {
	// Started counts n tasks handed over.
	Started(n int)
	// Finished counts n of them returned.
	Finished(n int)
}

// Watcher is implemented by the Sleepers of a Fake. A timer tells the
// clock through it what Fake.Advance, Fake.Settle and
// Fake.BlockUntilContext wait for; hashedwheel does so for every timer on
// a Fake.
type Watcher interface {
	// Watch registers the timer.
	Watch(timer Watched)
	// Accepted tells the clock that the timer accepted a timeout.
	Accepted()
	// Enter marks the calling goroutine as running a task of the timer,
	// until Exit: Advance and Settle called there panic instead of waiting
	// for their own caller to return. It returns the token to give Exit.
	Enter() uint64
	// Exit ends what Enter began.
	Exit(token uint64)
}

// Watched is what a timer on a Fake shows it. Its methods are called with
// the clock's lock held and must not call the clock.
type Watched interface {
	// Pending returns the timeouts accepted and neither run nor cancelled.
	Pending() int64
	// Unseen reports whether the timer holds work its worker has not yet
	// taken in.
	Unseen() bool
	// Worker returns the goroutine id of the timer's worker, 0 if none.
	Worker() uint64
}

// Real is the runtime's clock.
type Real struct{ origin time.Time }

// NewReal returns the runtime's clock, with the origin of Nanotime now.
func NewReal() *Real { return &Real{origin: time.Now()} }

// Now returns time.Now().
func (r *Real) Now() time.Time { return time.Now() }

// Nanotime returns the monotonic nanoseconds since the clock was made.
func (r *Real) Nanotime() int64 { return int64(time.Since(r.origin)) }

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
