// Package scenario measures the timers of package contender, one scenario
// per file, each on every contender in the same process and run, so that
// every figure can be set beside time.AfterFunc's from the same run:
//
//  1. and 2. Churn: schedule + cancel pairs, one goroutine and all cores,
//     with N timeouts already pending.
//  3. Ratio: steady state with a pending population at delay D, swept over
//     D/(W·tick); where a rounds wheel loses to a hierarchical one.
//  4. Storm: a million timeouts due within the same 10 ms.
//  5. Lateness: fire time minus due time, signed, CPUs idle and busy.
//  6. Memory: heap bytes per pending timeout; GC during a steady churn.
//  7. Idle: CPU time of a timer with nothing, one far timeout, or many far
//     timeouts pending.
//  8. Re-arm: pushing each of N connections' idle deadline back on every
//     message, none firing.
//  9. Scaling: schedule + cancel churn at each GOMAXPROCS, as many
//     goroutines as Ps.
//  10. Keyed: one deadline per key; set, move and remove a key with N keys
//     live, on the keyed sets of package contender, beside a
//     mutex-guarded map of time.AfterFunc timers; the heap per key.
//
// Every timing is a Stat: the median of the scenario's runs (windows,
// storms, fills, collections), with the least and the most of them, in
// nanoseconds but for a share of a core or a rate. CPU time is the whole process's
// (getrusage), so it includes each timer's own goroutines, which a
// wall-clock ns/op measured on the calling goroutine hides.
package scenario
