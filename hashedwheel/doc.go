// Package hashedwheel is a Go port of Netty's HashedWheelTimer: a timer for
// very many timeouts that are mostly cancelled or pushed back before they
// fire, such as request deadlines, idle-connection checks and heartbeats.
//
// One worker goroutine advances a wheel of buckets, a tick at a time.
// NewTimeout, Cancel and Reset never take a lock and never touch the wheel:
// they hand the timeout to the worker through lock-free stacks and queues.
// The worker moves new timeouts into their buckets, unlinks cancelled ones,
// and hands the due ones to an executor, by default a bounded ants
// goroutine pool, on which tasks that come due together start together.
// While nothing is due it sleeps until the first tick that has something
// due. docs/design.md in the repository follows a timeout through it.
//
// Besides Netty's Timer and Timeout, a HashedWheelTimer offers AfterFunc,
// Timeout.Reset to move a deadline without allocating, Every and
// ScheduleFunc for periodic work and schedules, and WithTimeout and
// WithDeadline for context.Context deadlines the wheel enforces; code that
// takes a timer as a dependency takes an Interface.
//
// The timer keeps Netty's contract:
//
//   - A task never runs before its deadline, and runs about one tick after
//     it, later only under load.
//   - Cancel is a single atomic switch: it succeeds once, and never after
//     the task was claimed for running.
//   - Stop returns every timeout that had neither expired nor been
//     cancelled; a timeout accepted by NewTimeout is never lost.
//
// The resolution is the tick duration (default and minimum 1ms). The wheel
// is cheapest when ticksPerWheel·tickDuration covers the usual delay.
//
// # Testing with fake time
//
// A timer made with WithClock(fake), fake a *clock.Fake, runs on fake time,
// made anywhere, at package level or in TestMain: fake.Advance moves it and
// returns once every task due by then has run, so that a test of code that
// waits 30 minutes for a timeout takes microseconds. Code that uses the
// program's shared timer through an Interface is handed such a timer in
// its tests.
//
// A timer made inside a testing/synctest bubble runs on the bubble's fake
// clock too. Make it inside the bubble, with its default executor or one
// made there too, and Stop it before the bubble ends; Stop returns once the
// timer's goroutines and its pool's have exited.
package hashedwheel
