// Package minheap is a min-heap timer, the heap baseline of the benchmarks:
// one mutex, a binary heap of timeouts ordered by deadline in which each
// timeout knows its index (so Cancel removes it in O(log n)), and one
// runtime timer reset to the earliest deadline. It is the design of goim's
// pkg/time, and of the Go runtime's per-P timer heaps without the sharding.
//
// A task never runs before its deadline: the worker expires a timeout only
// once the clock has reached it. There is no tick, so lateness is the
// runtime timer's wake-up latency plus the hand-off to the executor.
//
// Timer implements hashedwheel.Timer and hands expired tasks to a
// pool.Executor through the core's own dispatcher, as hashedwheel does.
// Reset sifts a timeout to its new place in O(log n).
package minheap
