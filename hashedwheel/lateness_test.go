package hashedwheel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatenessCountsEachTaskOnceItRan: on a fake clock, a timeout due
// 3ms into a 10ms tick runs at the tick's end, 7ms late, all of it the
// hand-over's; a window read after a second one counts only the second.
func TestLatenessCountsEachTaskOnceItRan(t *testing.T) {
	h, fake := newFakeTimer(t)
	assert.Zero(t, h.Lateness(), "nothing ran")
	mustSchedule(t, h, noopTask, 3*time.Millisecond)
	advance(fake, testTick)
	first := h.Lateness()
	require.Equal(t, uint64(1), first.Total.Count())
	assert.Equal(t, 7*time.Millisecond, first.Total.Max)
	assert.Equal(t, first.Total, first.HandOver, "inline: no wait for a goroutine")
	assert.Equal(t, time.Duration(0), first.HandOff.Max)
	s := h.Stats()
	assert.Equal(t, 7*time.Millisecond, s.MaxLateness)
	assert.Equal(t, 7*time.Millisecond, s.LatenessP99, "a bucket's bound, capped at the max")

	mustSchedule(t, h, noopTask, 9*time.Millisecond)
	advance(fake, testTick)
	window := h.Lateness().Sub(first)
	require.Equal(t, uint64(1), window.Total.Count())
	assert.Equal(t, time.Millisecond, window.Total.Sum)
	assert.Equal(t, uint64(1), window.Total.Counts[bucketOf(t, time.Millisecond)])
	assert.LessOrEqual(t, window.Total.Max, 7*time.Millisecond, "no more than the later reading's max")
	assert.GreaterOrEqual(t, window.Total.Max, time.Millisecond)
}

// TestHistogramQuantileAndBounds: the bounds are the native schema-2
// buckets, four to a doubling, bucket 80 ending at 1s; a quantile is its
// bucket's bound, capped at the max.
func TestHistogramQuantileAndBounds(t *testing.T) {
	assert.Equal(t, time.Second, HistogramBound(80))
	assert.Equal(t, 2*time.Second, HistogramBound(84))
	assert.Equal(t, 953*time.Nanosecond, HistogramBound(0))
	var h Histogram
	h.Counts[bucketOf(t, 2*time.Millisecond)] = 99
	h.Counts[bucketOf(t, 5*time.Second)] = 1
	h.Max = 5 * time.Second
	assert.Equal(t, uint64(100), h.Count())
	assert.Equal(t, HistogramBound(bucketOf(t, 2*time.Millisecond)), h.Quantile(0.5))
	assert.Equal(t, HistogramBound(bucketOf(t, 2*time.Millisecond)), h.Quantile(0.99))
	assert.Equal(t, 5*time.Second, h.Quantile(1))
	assert.Zero(t, Histogram{}.Quantile(0.5))
}

// bucketOf returns the bucket holding d.
func bucketOf(tb testing.TB, d time.Duration) int {
	for i := range HistogramBuckets {
		if d <= HistogramBound(i) {
			return i
		}
	}
	require.Fail(tb, "no bucket")
	return 0
}
