// Package engine is the shell shared by the benchmark module's own timers,
// hierarchical and minheap: the timeout state machine, the lock, the worker
// goroutine, the hand-off of expired tasks to a pool.Executor, and Stop.
//
// A timer built on it supplies only its data structure (a Structure), so
// that comparing two of them, or one of them with hashedwheel, compares data
// structures and not the code around them. The hand-off to the executor
// copies hashedwheel's batching policy for the same reason.
//
// The contract is hashedwheel's: a task never runs before its deadline; a
// timeout ends exactly once, expired or cancelled; Stop returns, cancelled,
// every timeout that had neither expired nor been cancelled.
package engine
