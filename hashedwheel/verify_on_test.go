//go:build wheeltimer_verify

package hashedwheel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVerifyEachPassPanicsOnABrokenWheel: with the wheeltimer_verify tag,
// the worker's check after a step panics, naming the step and the broken
// invariant.
func TestVerifyEachPassPanicsOnABrokenWheel(t *testing.T) {
	assert.True(t, verifyEachPass, "the tag turns the check on")
	w := &worker{wheel: newWheel(8, wheelTick)}
	assert.NotPanics(t, func() { w.checkWheel("expireTimeouts") })
	w.wheel.size = 1
	assert.PanicsWithValue(t,
		"hashedwheel: wheeltimer_verify: the wheel's invariants are broken after expireTimeouts: the buckets link 0 timeouts, size is 1",
		func() { w.checkWheel("expireTimeouts") })
}
