//go:build wheeltimer_verify

package hashedwheel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerifyEachStepPanicsOnABrokenWheel: with the wheeltimer_verify tag,
// the worker's check after a step panics, naming the step and the broken
// invariant.
func TestVerifyEachStepPanicsOnABrokenWheel(t *testing.T) {
	assert.True(t, verifyEachStep, "the tag turns the check on")
	w := &worker{wheel: newWheel(8, wheelTick)}
	assert.NotPanics(t, func() { w.checkWheel("expireTimeouts") })
	w.wheel.size = 1
	assert.PanicsWithValue(t,
		"hashedwheel: wheeltimer_verify: the wheel's invariants are broken after expireTimeouts: the buckets link 0 timeouts, size is 1",
		func() { w.checkWheel("expireTimeouts") })
}

// TestVerifyStepChecksTheWholeWheelInShare: the check after a step
// covers a small wheel whole every time, and a large one whole once the
// work since the last check is a verifyShare-th of the check's.
func TestVerifyStepChecksTheWholeWheelInShare(t *testing.T) {
	small := newWheel(8, wheelTick)
	require.True(t, insert(small, newTestTimeout(inTick(3))))
	require.NoError(t, small.verifyStep())
	small.buckets[5].minDue = 7 // damage in a bucket no step changed
	assert.ErrorContains(t, small.verifyStep(), "empty bucket 5 has the bound 7")

	large := newWheel(4096, wheelTick)
	require.True(t, insert(large, newTestTimeout(inTick(3)))) // a unit of work
	large.buckets[100].minDue = 7
	steps := 0
	for large.verifyStep() == nil {
		steps++
		require.Less(t, steps, 4096, "a whole check comes")
	}
	assert.Equal(t, (4096+1+verifyShare-1)/verifyShare-2, steps,
		"the check that finds it comes once the link and the steps are a verifyShare-th of its cost")
}
