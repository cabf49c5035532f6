// Package hierarchical is a Kafka-style hierarchical timing wheel (Varghese
// and Lauck's scheme 7, as in Kafka's purgatory), written for the
// benchmarks as the "hierarchical" side of "rounds vs hierarchical".
//
// Level 0 has wheelSize buckets of one tick each; each further level has
// wheelSize buckets of the level below's whole span, and is created only
// when a deadline first needs it. A timeout goes into the lowest level whose
// span covers its deadline. Non-empty buckets, not timeouts, sit in a
// min-heap delay queue that drives the clock, so an empty tick costs
// nothing: the worker sleeps until the earliest bucket is due. When a bucket
// of a higher level comes due, its timeouts are re-inserted one or more
// levels down (the cascade); each timeout moves at most once per level.
// Cancel unlinks the timeout from its bucket in O(1).
//
// Unlike Kafka's wheel, which expires a bucket at the start of its range and
// so can fire up to a tick early, this one never fires early: a level-0
// bucket expires only once its whole range has passed, higher-level buckets
// only cascade, and each timeout's own deadline is checked before it runs.
// So a task runs at the end of the tick that holds its deadline, like
// hashedwheel's.
//
// Timer implements hashedwheel.Timer and hands expired tasks to a
// pool.Executor through the core's own dispatcher, as hashedwheel does, so
// that the two differ in their wheel only. Reset re-adds a timeout at its
// new deadline, as Kafka's wheel does. Producers take one mutex (Kafka takes a read lock and
// a bucket monitor); the worker takes it to expire and cascade.
package hierarchical
