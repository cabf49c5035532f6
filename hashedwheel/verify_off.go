//go:build !wheeltimer_verify

package hashedwheel

// verifyEachStep is the debug switch of the wheel's invariant check, off
// in a normal build: see verify_on.go.
const verifyEachStep = false
