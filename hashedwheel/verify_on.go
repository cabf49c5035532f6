//go:build wheeltimer_verify

package hashedwheel

// verifyEachStep, set by the wheeltimer_verify build tag, makes the worker
// check the wheel's invariants after each step of its pass that changes
// the wheel (wheel.verifyStep says how often) and panic on the first
// failure, naming the step and the invariant; and panic on a timeout found
// due before its deadline, which a normal build logs and keeps. It is a
// debug switch for tests, as the runtime's verifyTimers: the model, fuzz
// and soak tests run with it (make test).
const verifyEachStep = true
