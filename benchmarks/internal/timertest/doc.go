// Package timertest is a conformance suite for implementations of
// hashedwheel.Timer: never early, every timeout fired or cancelled exactly
// once, Cancel from many goroutines, Stop returning exactly the pending
// timeouts, the error values, and tasks that schedule or stop. The
// benchmark module runs it on its own timers and, to check the suite
// itself, on hashedwheel.
//
// The tests synchronise on channels, not sleeps. Real time is used where it
// is the subject (a task must not run before its deadline), and with bounds
// a loaded two-core machine meets: exact expiry instants are checked in
// virtual time by each structure's own tests.
package timertest
