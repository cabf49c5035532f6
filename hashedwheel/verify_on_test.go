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

// TestVerifyStepChecksTheBucketsAStepChanged: on a wheel too large for a
// whole check after every step, the check after a step still covers each
// bucket the step changed, and the whole wheel every so often.
func TestVerifyStepChecksTheBucketsAStepChanged(t *testing.T) {
	wh := newWheel(4096, wheelTick)
	require.NoError(t, wh.verify(false))
	to := newTestTimeout(inTick(3))
	require.True(t, wh.insert(to))
	to.bucket++ // damage in the bucket the insert changed
	assert.ErrorContains(t, wh.verifyStep(), "records bucket 4")
	to.bucket--
	require.NoError(t, wh.verify(false))

	wh.buckets[100].minDue = 7 // damage in a bucket no step changed
	steps := 0
	for wh.verifyStep() == nil {
		steps++
		require.Less(t, steps, 4096, "a whole check comes")
	}
	assert.Equal(t, (4096+1)/verifyStride, steps, "after a verifyStride-th of the buckets and timeouts")
}
