// Package clockwork is the handshake between a hashedwheel timer and its
// clock.Clock, kept out of the public API: the Sleeper a timer's worker
// waits on and, on a clock.Fake, what the timer tells the clock so that
// Advance, Settle and BlockUntilContext know what to wait for.
//
// Package clock implements it and registers its side with Register from
// its init: clock imports this package, so the timer reaches the clock's
// unexported methods only through the functions registered here.
package clockwork

import "math"

// Forever is the instant a Sleeper waits for when only Wake may end the
// sleep.
const Forever = int64(math.MaxInt64)

// Sleeper blocks one goroutine until an instant of its clock, as read by
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

// WorkTracker is implemented by the Sleepers of a clock.Fake. A timer
// reports through it the tasks it has handed to its executor, and their
// return, so that Fake.Settle and Fake.Advance wait for them too.
type WorkTracker interface {
	// Started counts n tasks handed over.
	Started(n int)
	// Finished counts n of them returned.
	Finished(n int)
}

// Watcher is implemented by the Sleepers of a clock.Fake. A timer tells
// the clock through it what Fake.Advance, Fake.Settle and
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

// Watched is what a timer on a clock.Fake shows it. Its methods are called
// with the clock's lock held and must not call the clock.
type Watched interface {
	// Pending returns the timeouts accepted and neither run nor cancelled.
	Pending() int64
	// Unseen reports whether the timer holds work its worker has not yet
	// taken in.
	Unseen() bool
	// Worker returns the goroutine id of the timer's worker, 0 if none.
	Worker() uint64
}

// Wrapper is a clock that wraps the Sleepers made for it: a test's clock,
// embedding a clock.Fake or clock.Real, that intercepts the calls of its
// timer's worker. NewSleeper applies it.
type Wrapper interface {
	// WrapSleeper returns the Sleeper to use in place of s.
	WrapSleeper(s Sleeper) Sleeper
}

// Clock is what package clock registers: its side of the handshake.
type Clock struct {
	// NewSleeper returns a Sleeper bound to c, a clock.Clock, for one
	// goroutine.
	NewSleeper func(c any) Sleeper
	// Check returns an error for c, a clock.Clock, if it cannot keep
	// time: a zero clock.Fake.
	Check func(c any) error
	// SleepingUntil returns the instant the sleepers of fake, a
	// *clock.Fake, wait for, the earliest if several, or Forever.
	SleepingUntil func(fake any) int64
}

// registered is set once, by package clock's init, before any code that
// holds a clock.Clock can run.
var registered Clock

// Register sets the clock's side of the handshake; package clock calls it
// from its init.
func Register(c Clock) { registered = c }

// NewSleeper returns a Sleeper bound to c, a clock.Clock, for one
// goroutine, wrapped by c's WrapSleeper where c is a Wrapper.
func NewSleeper(c any) Sleeper {
	s := registered.NewSleeper(c)
	if w, ok := c.(Wrapper); ok {
		s = w.WrapSleeper(s)
	}
	return s
}

// Check returns an error for c, a clock.Clock, if it cannot keep time, as
// a zero clock.Fake cannot; hashedwheel.WithClock refuses it.
func Check(c any) error { return registered.Check(c) }

// SleepingUntil returns the Nanotime instant the sleepers of fake, a
// *clock.Fake, wait for, the earliest if several, or Forever: the next
// instant a timer on it wakes at. A test calls it after Fake.Settle or
// Fake.WaitAsleep.
func SleepingUntil(fake any) int64 { return registered.SleepingUntil(fake) }
