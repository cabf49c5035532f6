package histogram

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotsAreTheNativeSchema2Buckets: every slot but the first and last
// is the native bucket (2^((i-1)/4), 2^(i/4)] seconds, i its index; a
// duration on an upper bound is in that slot, one a nanosecond past it in
// the next.
func TestSlotsAreTheNativeSchema2Buckets(t *testing.T) {
	assert.Equal(t, 0, Slot(-5))
	assert.Equal(t, 0, Slot(0))
	assert.Equal(t, 0, Slot(953))
	assert.Equal(t, 1, Slot(954))
	for s := 1; s < Len-1; s++ {
		i := s - 1 + FirstIndex
		want := math.Exp2(float64(i)/4) * 1e9
		assert.InDelta(t, want, float64(Upper(s)), 1, "slot %d, native index %d", s, i)
		assert.Equal(t, s, Slot(Upper(s)), "slot %d's upper bound", s)
		assert.Equal(t, s+1, Slot(Upper(s)+1), "past slot %d", s)
	}
	assert.Equal(t, int64(64e9), Upper(Len-2), "the last bounded slot ends at 64s")
	assert.Equal(t, Len-1, Slot(math.MaxInt64))
	assert.Equal(t, 24, Len-2-1+FirstIndex, "the last bounded slot is native bucket 24")
}

// TestQuantileIsTheSlotHoldingIt: 90 durations of 1ms and 10 of 1s: p50
// and p90 are 1ms's slot, bounded by the max, p99 1s's.
func TestQuantileIsTheSlotHoldingIt(t *testing.T) {
	var l Local
	var sh Shared
	l.Add(1e6, 90)
	l.Add(1e9, 10)
	l.MergeInto(&sh)
	s := sh.Snapshot()
	require.Equal(t, uint64(100), s.Count())
	assert.Equal(t, Upper(Slot(1e6)), s.Quantile(0.5))
	assert.Equal(t, Upper(Slot(1e6)), s.Quantile(0.9))
	assert.Equal(t, int64(1e9), s.Quantile(0.99), "the slot's bound capped at the max")
	assert.Equal(t, int64(1e9), s.Max)
	assert.Equal(t, int64(90*1e6+10*1e9), s.Sum)
	assert.GreaterOrEqual(t, Upper(Slot(1e6)), int64(1e6))
	assert.Less(t, float64(Upper(Slot(1e6))), 1.19*1e6, "within a slot's width")
	var empty Snapshot
	assert.Zero(t, empty.Quantile(0.99))
}

// TestMergeEmptiesTheLocal: a second merge adds nothing.
func TestMergeEmptiesTheLocal(t *testing.T) {
	var l Local
	var sh Shared
	l.Add(5000, 1)
	l.Add(-1, 1)
	l.MergeInto(&sh)
	l.MergeInto(&sh)
	s := sh.Snapshot()
	assert.Equal(t, uint64(2), s.Count())
	assert.Equal(t, uint64(1), s.Counts[0], "a negative duration counts as 0")
	assert.Equal(t, int64(5000), s.Sum)
}
