package hashedwheel

import (
	"time"

	"github.com/wheeltimer/wheeltimer/internal/histogram"
)

// Lateness is how late a timer's tasks started after their deadlines:
// Total, and its parts HandOver, to the worker's hand-over to the executor
// (up to a tick by design), and HandOff, from there to the task's start. A
// task counts once it has returned, a periodic one each run.
type Lateness struct {
	Total, HandOver, HandOff Histogram
}

// Sub returns the lateness counted since earlier, of the same timer.
func (l Lateness) Sub(earlier Lateness) Lateness {
	return Lateness{l.Total.Sub(earlier.Total), l.HandOver.Sub(earlier.HandOver), l.HandOff.Sub(earlier.HandOff)}
}

// HistogramBuckets is the number of buckets of a Histogram.
const HistogramBuckets = histogram.Len

// Histogram counts durations in buckets four to a doubling, about 19%
// wide: bucket 0 holds those up to 2^-20 s, bucket i up to the last those
// in (2^((i-81)/4), 2^((i-80)/4)] s, as bucket i-80 of a Prometheus native
// histogram of schema 2, and the last those beyond 64s.
type Histogram struct {
	Counts [HistogramBuckets]uint64
	// Max is the longest; in a window from Sub, its last bucket's bound,
	// at most the later Max.
	Sum, Max time.Duration
}

// HistogramBound returns the upper bound of bucket i, to the nanosecond.
func HistogramBound(i int) time.Duration { return time.Duration(histogram.Upper(i)) }

// Count returns the number of durations counted.
func (h Histogram) Count() uint64 {
	return h.snapshot().Count()
}

// Quantile returns the q-quantile, 0 ≤ q ≤ 1, as the upper bound of its
// bucket, no more than Max: at most 19% above. It is 0 when empty.
func (h Histogram) Quantile(q float64) time.Duration {
	return time.Duration(h.snapshot().Quantile(q))
}

// Sub returns the durations counted since earlier, of the same histogram.
func (h Histogram) Sub(earlier Histogram) Histogram {
	w := Histogram{Sum: h.Sum - earlier.Sum}
	for i := range h.Counts {
		if w.Counts[i] = h.Counts[i] - earlier.Counts[i]; w.Counts[i] > 0 {
			w.Max = min(HistogramBound(i), h.Max)
		}
	}
	return w
}

func (h Histogram) snapshot() histogram.Snapshot {
	return histogram.Snapshot{Counts: h.Counts, Sum: int64(h.Sum), Max: int64(h.Max)}
}

func fromSnapshot(s histogram.Snapshot) Histogram {
	return Histogram{Counts: s.Counts, Sum: time.Duration(s.Sum), Max: time.Duration(s.Max)}
}

// Lateness returns how late the timer's tasks have started after their
// deadlines; zero before the start. It takes no lock.
func (h *HashedWheelTimer) Lateness() Lateness {
	if h.state.Load() == timerInit || h.worker == nil {
		return Lateness{}
	}
	total, over, off := h.worker.dispatcher.Lateness()
	return Lateness{fromSnapshot(total), fromSnapshot(over), fromSnapshot(off)}
}
