package prometheus

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// The layout of a hashedwheel.Histogram, as its documentation gives it:
// bucket 0 is the zero bucket, up to 2^-20 s; bucket i, from 1 to
// hashedwheel.HistogramBuckets-2, is the bucket of index i-nativeOffset
// of a native histogram of schema 2, (2^((i-81)/4), 2^((i-80)/4)]
// seconds, four to a doubling, bucket 80 ending at 1s.
const (
	nativeSchema  = 2
	nativeOffset  = 80
	perDoubling   = 1 << nativeSchema
	zeroThreshold = 1.0 / (1 << 20) // seconds
)

// latenessMetric is a series of the lateness histogram: a classic
// constant histogram, whose Write adds the fields of the native one.
type latenessMetric struct {
	prometheus.Metric
	counts *[hashedwheel.HistogramBuckets]uint64
}

// newHistogram returns the series of h with the label part: classic
// buckets at le = 2^k seconds, k from -20 to 6, the bounds of buckets 0,
// 4, 8, …, HistogramBuckets-2, so that each cumulative count is exact,
// and the native histogram of Write.
func newHistogram(desc *prometheus.Desc, h hashedwheel.Histogram, part string) prometheus.Metric {
	classic := make(map[float64]uint64, (len(h.Counts)-2)/perDoubling+1)
	var count uint64
	for i, c := range h.Counts {
		count += c
		if i < len(h.Counts)-1 && i%perDoubling == 0 {
			classic[math.Ldexp(1, (i-nativeOffset)/perDoubling)] = count
		}
	}
	return latenessMetric{
		Metric: prometheus.MustNewConstHistogram(desc, count, h.Sum.Seconds(), classic, part),
		counts: &h.Counts,
	}
}

// Write writes the classic histogram, and the native one beside it: of
// schema 2, its zero bucket of threshold 2^-20 s bucket 0, its positive
// buckets the others. The last bucket, the durations beyond 64s, has no
// native bucket of its own: its count goes into bucket 25, (64s, 76.1s],
// the next after 64s, as the native histogram has no overflow bucket;
// the sum and count stay exact.
func (m latenessMetric) Write(out *dto.Metric) error {
	if err := m.Metric.Write(out); err != nil {
		return err
	}
	h := out.GetHistogram()
	h.Schema = proto.Int32(nativeSchema)
	h.ZeroThreshold = proto.Float64(zeroThreshold)
	h.ZeroCount = proto.Uint64(m.counts[0])
	h.PositiveSpan, h.PositiveDelta = nativeBuckets(m.counts)
	return nil
}

// nativeBuckets returns the spans and deltas of the native positive
// buckets of counts: runs of buckets with counts, a run going on across
// up to two empty buckets, cheaper as zero deltas than as a span.
func nativeBuckets(counts *[hashedwheel.HistogramBuckets]uint64) ([]*dto.BucketSpan, []int64) {
	var (
		spans  []*dto.BucketSpan
		deltas []int64
		prev   int64 // the count of the last bucket written
		last   int   // the slot of the last bucket written; 0 before the first
	)
	for i := 1; i < len(counts); i++ {
		if counts[i] == 0 {
			continue
		}
		switch gap := i - last - 1; {
		case last == 0:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(int32(i - nativeOffset)), Length: proto.Uint32(0)})
		case gap > 2:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(int32(gap)), Length: proto.Uint32(0)})
		default:
			for range gap {
				deltas, prev = append(deltas, -prev), 0
				*spans[len(spans)-1].Length++
			}
		}
		deltas, prev = append(deltas, int64(counts[i])-prev), int64(counts[i])
		*spans[len(spans)-1].Length++
		last = i
	}
	return spans, deltas
}
