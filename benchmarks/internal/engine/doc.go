// Package engine is the shell shared by the benchmark module's own timers,
// hierarchical and minheap: the timeout state machine, the lock, the worker
// goroutine, the hand-off of expired tasks to a pool.Executor, Stop, and the
// public methods each timer embeds (Shell).
//
// A timer built on it supplies only its data structure (a Structure), so
// that comparing two of them, or one of them with hashedwheel, compares data
// structures and not the code around them. For the same reason the hand-off
// to the executor is the core's own internal/dispatch, configured as
// hashedwheel configures it.
//
// The contract is hashedwheel's: a task never runs before its deadline; a
// timeout ends exactly once, expired or cancelled; Reset moves a pending
// timeout's deadline and fails once it has ended; Stop returns, cancelled,
// every timeout that had neither expired nor been cancelled, and returns
// once every task already handed over has returned.
package engine
