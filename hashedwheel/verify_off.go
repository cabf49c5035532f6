//go:build !wheeltimer_verify

package hashedwheel

// verifyEachStep, the wheel's invariant check (see verify_on.go), is off
// in a normal build.
const verifyEachStep = false
