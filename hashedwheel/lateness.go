package hashedwheel

import (
	"time"

	"github.com/wheeltimer/wheeltimer/internal/histogram"
)

// Lateness is how late a timer's tasks started after their deadlines,
// since the timer started, as three histograms: Total, and its two parts,
// HandOver, from a task's deadline to the worker's hand-over of its tick
// to the executor (the wait for the end of the tick, up to a tick by
// design, and the worker's lag), and HandOff, from the hand-over to the
// task's start (the wait for a goroutine of the executor). A task counts
// once it has returned; a periodic timeout, once for each run. Take two
// readings and Sub them for a window, as a scrape does.
type Lateness struct {
	Total, HandOver, HandOff Histogram
}

// Sub returns the lateness of the tasks counted since earlier, a reading
// of the same timer.
func (l Lateness) Sub(earlier Lateness) Lateness {
	return Lateness{l.Total.Sub(earlier.Total), l.HandOver.Sub(earlier.HandOver), l.HandOff.Sub(earlier.HandOff)}
}

// HistogramBuckets is the number of buckets of a Histogram.
const HistogramBuckets = histogram.Len

// Histogram counts durations in log-spaced buckets, four to each
// doubling, each about 19% wide, from 1µs to 64s. Bucket 0 holds the
// durations up to 2^-20 s (953.7ns); bucket i, 1 ≤ i ≤ HistogramBuckets-2,
// those in (2^((i-81)/4), 2^((i-80)/4)] seconds: bucket i-80 of a
// Prometheus native histogram of schema 2, whose zero bucket is bucket 0;
// the last bucket holds the durations beyond 64s.
type Histogram struct {
	Counts [HistogramBuckets]uint64
	// Sum is the durations' sum; Max the longest, or, in a window that
	// Sub returned, the upper bound of its last bucket with a count, no
	// more than the later reading's Max.
	Sum, Max time.Duration
}

// HistogramBound returns the upper bound of bucket i: 2^((i-80)/4)
// seconds rounded down to the nanosecond, 953ns for bucket 0, and the
// largest Duration for the last.
func HistogramBound(i int) time.Duration { return time.Duration(histogram.Upper(i)) }

// Count returns the number of durations counted.
func (h Histogram) Count() uint64 {
	s := h.snapshot()
	return s.Count()
}

// Quantile returns the q-quantile, 0 ≤ q ≤ 1, as the upper bound of the
// bucket that holds it, no more than Max: at most 19% above the true
// quantile. It returns 0 for an empty histogram.
func (h Histogram) Quantile(q float64) time.Duration {
	s := h.snapshot()
	return time.Duration(s.Quantile(q))
}

// Sub returns the durations counted since earlier, a reading of the same
// histogram.
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
// deadlines, since it started; the zero Lateness before. Like Stats, it
// takes no lock.
func (h *HashedWheelTimer) Lateness() Lateness {
	if h.state.Load() == timerInit || h.worker == nil { // set before the state, by Start
		return Lateness{}
	}
	total, over, off := h.worker.dispatcher.Lateness()
	return Lateness{fromSnapshot(total), fromSnapshot(over), fromSnapshot(off)}
}
