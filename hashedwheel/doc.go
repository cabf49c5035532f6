// Package hashedwheel is a Go port of Netty's HashedWheelTimer: a timer for
// very many timeouts that are mostly cancelled before they fire, such as
// request deadlines, idle-connection checks and heartbeats.
//
// One worker goroutine advances a wheel of buckets every tick. NewTimeout
// and Cancel never take a lock and never touch the wheel: they hand the
// timeout to the worker through lock-free stacks and queues. Each tick the
// worker unlinks cancelled timeouts, moves new ones into their buckets, and
// hands the due ones to an executor, by default a bounded ants goroutine
// pool; between ticks it does the first two whenever producers have queued
// a few thousand, so that what they cancel is released at once.
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
// The resolution is the tick duration (default 100ms, at least 1ms). The
// wheel is cheapest when ticksPerWheel·tickDuration covers the usual delay.
package hashedwheel
