package otel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// LatenessSource is what a Producer reads: a *hashedwheel.HashedWheelTimer,
// or anything else with its Lateness method.
type LatenessSource interface {
	Lateness() hashedwheel.Lateness
}

// PartAttribute is the attribute naming the part of the lateness
// histogram: "total", "hand_over" or "hand_off" (see hashedwheel.Lateness).
const PartAttribute = "part"

// LatenessMetric is the name of the lateness histogram.
const LatenessMetric = Prefix + "lateness"

// ScopeName is the name of the instrumentation scope of the metrics a
// Producer produces.
const ScopeName = "github.com/wheeltimer/wheeltimer/exporters/otel"

// latenessBounds are the histogram's explicit bounds, in seconds: those
// of every bucket of a hashedwheel.Histogram but the last, whose bound is
// the implied +Inf. The data points share them, as the SDK's own
// histograms' do.
var latenessBounds = func() []float64 {
	bounds := make([]float64, hashedwheel.HistogramBuckets-1)
	for i := range bounds {
		bounds[i] = hashedwheel.HistogramBound(i).Seconds()
	}
	return bounds
}()

var _ sdkmetric.Producer = (*Producer)(nil)

// Producer reports timers' Lateness as the explicit-bucket histogram
// hashedwheel.lateness, in seconds, with a data point for each timer and
// part: the attributes timer=name and part="total", "hand_over" or
// "hand_off". The bounds are those of hashedwheel.Histogram's buckets,
// HistogramBound(i) for each bucket i but the last, so that each bucket
// count is the timer's own; Sum and Max are the Histogram's, Min is not
// reported.
//
// The OpenTelemetry metric API has no observable histogram, and a
// histogram instrument records each value itself: it cannot report the
// counts a timer keeps. A Producer is the SDK's way to hand a reader
// metrics aggregated elsewhere: give it to the reader of the
// MeterProvider that Register's meter belongs to, with
// sdkmetric.WithProducer, then Register each timer on it.
//
// The histogram is cumulative, whatever temporality the reader's exporter
// prefers: the counts since the timer started, with the time of Register
// as the start time. A Producer is safe for concurrent use.
type Producer struct {
	mu     sync.Mutex
	timers map[string]*latenessTimer // by name
}

// latenessTimer is a timer registered on a Producer.
type latenessTimer struct {
	source LatenessSource
	start  time.Time
	attrs  [3]attribute.Set // by part: total, hand_over, hand_off
}

// NewProducer returns a Producer of no timer.
func NewProducer() *Producer {
	return &Producer{timers: map[string]*latenessTimer{}}
}

// Register adds timer's Lateness to what the Producer produces, with the
// attribute timer=name, read once per collection. Unregister the returned
// Registration to stop reporting the timer and free its name. It fails
// with an error wrapping ErrNameTaken for a name under which a timer is
// already registered on p, and with an error wrapping
// hashedwheel.ErrInvalidOption for an empty name or a nil timer.
func (p *Producer) Register(name string, timer LatenessSource) (metric.Registration, error) {
	switch {
	case name == "":
		return nil, fmt.Errorf("%w: Producer.Register name %q: a timer needs a name", hashedwheel.ErrInvalidOption, name)
	case isNil(timer):
		return nil, fmt.Errorf("%w: Producer.Register(%q) with a nil timer", hashedwheel.ErrInvalidOption, name)
	}
	t := &latenessTimer{source: timer, start: time.Now()}
	for i, part := range []string{"total", "hand_over", "hand_off"} {
		t.attrs[i] = attribute.NewSet(attribute.String(TimerAttribute, name), attribute.String(PartAttribute, part))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timers[name] != nil {
		return nil, fmt.Errorf("%w: Producer.Register(%q): Unregister the other first, or give this timer a name of its own", ErrNameTaken, name)
	}
	p.timers[name] = t
	return &producerRegistration{p: p, name: name, t: t}, nil
}

// Produce reads each registered timer's Lateness, once, and returns the
// histogram hashedwheel.lateness of their data points; nothing if no
// timer is registered. It never fails.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	p.mu.Lock()
	timers := make([]*latenessTimer, 0, len(p.timers))
	for _, t := range p.timers {
		timers = append(timers, t)
	}
	p.mu.Unlock()
	if len(timers) == 0 {
		return nil, nil
	}
	now := time.Now()
	points := make([]metricdata.HistogramDataPoint[float64], 0, 3*len(timers))
	for _, t := range timers {
		l := t.source.Lateness()
		for i, h := range []hashedwheel.Histogram{l.Total, l.HandOver, l.HandOff} {
			point := metricdata.HistogramDataPoint[float64]{
				Attributes:   t.attrs[i],
				StartTime:    t.start,
				Time:         now,
				Count:        h.Count(),
				Bounds:       latenessBounds,
				BucketCounts: append([]uint64(nil), h.Counts[:]...),
				Sum:          h.Sum.Seconds(),
			}
			if point.Count > 0 {
				point.Max = metricdata.NewExtrema(h.Max.Seconds())
			}
			points = append(points, point)
		}
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: ScopeName},
		Metrics: []metricdata.Metrics{{
			Name:        LatenessMetric,
			Description: "How late tasks started after their deadlines (part total), split into hand_over, from the deadline to the worker's hand-over of its tick to the executor, and hand_off, from the hand-over to the start: the wait for a goroutine.",
			Unit:        "s",
			Data:        metricdata.Histogram[float64]{DataPoints: points, Temporality: metricdata.CumulativeTemporality},
		}},
	}}, nil
}

// producerRegistration is the Registration of a timer on a Producer.
type producerRegistration struct {
	embedded.Registration
	p    *Producer
	name string
	t    *latenessTimer
}

// Unregister stops reporting the timer and frees its name; it does
// nothing once done, or once another timer holds the name.
func (r *producerRegistration) Unregister() error {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if r.p.timers[r.name] == r.t {
		delete(r.p.timers, r.name)
	}
	return nil
}
