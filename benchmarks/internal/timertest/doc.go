// Package timertest is a conformance suite for implementations of
// hashedwheel.Timer: never early, every timeout fired or cancelled exactly
// once, Cancel from many goroutines, Stop returning exactly the pending
// timeouts and waiting for running tasks (but not when a task calls it),
// Reset moving a pending timeout and failing on an ended one, the dispatch
// policy (tasks due together start together on the default executor), the
// error values, and tasks that schedule or stop. The benchmark module runs
// it on its own timers and on hashedwheel, so that the timers it compares
// keep one contract; held.go says which parts hashedwheel is held to.
//
// The tests synchronise on channels, not sleeps. Real time is used where it
// is the subject (a task must not run before its deadline), and with bounds
// a loaded two-core machine meets: exact expiry instants are checked in
// virtual time by each structure's own tests.
package timertest
