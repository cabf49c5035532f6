// Package clockwork is the handshake between a hashedwheel timer and its
// clock.Clock, kept out of the public API: the Sleeper a timer's worker
// waits on, which clock.Clock's Sleeper method returns, and, on a
// clock.Fake, what the timer tells the clock through it so that Advance,
// Settle and BlockUntilContext know what to wait for.
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
