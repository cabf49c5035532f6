//go:build wheeltimer_verify

package hashedwheel

// verifyEachStep, set by the wheeltimer_verify build tag, makes the worker
// check the wheel's invariants (wheel.verifyStep) after each step of its pass
// that changes the wheel, and panic, naming the step and the broken
// invariant, on the first that fails; and panic on a timeout found due
// before its deadline, which a normal build logs and keeps. It is a debug
// switch, as the runtime's verifyTimers, for tests: the model, fuzz and
// soak tests run with it (make test).
const verifyEachStep = true
