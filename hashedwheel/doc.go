// Package hashedwheel is a Go port of Netty's HashedWheelTimer: a timer
// for very many timeouts that are mostly cancelled or pushed back before
// they fire, such as request deadlines, idle-connection checks and
// heartbeats.
//
// One worker goroutine advances a wheel of buckets a tick at a time,
// handing due timeouts to an executor, and sleeps while nothing is due.
// NewTimeout, Cancel and Reset never take a lock nor touch the wheel: they
// reach the worker through lock-free stacks and queues (docs/design.md).
//
// Besides Netty's Timer and Timeout, a HashedWheelTimer offers AfterFunc
// and Timeout.Reset, Every and ScheduleFunc for periodic work, WithTimeout
// and WithDeadline for contexts, and channel timers.
//
// The timer keeps Netty's contract:
//
//   - A task never runs before its deadline, and runs about one tick after it, later only under load.
//   - Cancel is one atomic switch: it succeeds once, never after the task was claimed for running.
//   - Stop returns every timeout that had neither expired nor been cancelled; a timeout accepted
//     by NewTimeout is never lost.
//
// # Testing with fake time
//
// A timer made with WithClock(fake), fake a *clock.Fake, runs on fake
// time: fake.Advance moves it and returns once every task due by then has
// run. A timer made inside a testing/synctest bubble runs on the bubble's
// clock; Stop it before the bubble ends.
package hashedwheel
