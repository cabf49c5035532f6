// Package prometheus exports the Stats of a wheeltimer timer as Prometheus
// metrics: a prometheus.Collector that reads Stats once per scrape.
//
// Every field of hashedwheel.Stats (hashedwheel.StatsFields) is a metric
// named namespace_field, "hashedwheel" by default, with its help text: a
// counter, with _total, for a total that only grows; a gauge for the
// others, as Pending and MaxTickLag; durations in seconds, with _seconds. Each metric has the
// label timer="name", so that several timers register side by side:
//
//	hashedwheel_scheduled_total{timer="orders"} 1042
//	hashedwheel_max_tick_lag_seconds{timer="orders"} 0.0031
//
// A timer's Lateness is the histogram namespace_lateness_seconds, one
// series for each part: part="total", "hand_over" and "hand_off" (see
// hashedwheel.Lateness). Each is both a native histogram, for servers that
// scrape them, and a classic one, for the others; see LatenessSource.
//
// Beside client_golang's package of the same name, import it under
// another, as wheelprom.
package prometheus

import (
	"fmt"
	"reflect"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// Source is what a Collector reads: a *hashedwheel.HashedWheelTimer, or
// anything else with its Stats method.
type Source interface {
	Stats() hashedwheel.Stats
}

// LatenessSource is a Source that also has the Lateness method, as a
// *hashedwheel.HashedWheelTimer has. A Collector of a LatenessSource
// exports its Lateness as the histogram namespace_lateness_seconds, with
// the label part="total", "hand_over" or "hand_off", read once per scrape.
//
// Each series carries a native histogram of schema 2, whose buckets are
// the Histogram's, its zero bucket, of threshold 2^-20 s, bucket 0, and
// the durations beyond 64s in the bucket after 64s, (64s, 76.1s]; and
// classic buckets, for servers that do not scrape native histograms, at
// le = 2^k seconds for k from -20 to 6 (953.7ns to 64s) and +Inf, whose
// counts are exact, as each of those bounds is a bound of the Histogram's
// buckets.
type LatenessSource interface {
	Source
	Lateness() hashedwheel.Lateness
}

// TimerLabel is the label naming the timer of each metric.
const TimerLabel = "timer"

// PartLabel is the label naming the part of the lateness histogram:
// "total", "hand_over" or "hand_off".
const PartLabel = "part"

// DefaultNamespace is the prefix of the metrics' names unless
// WithNamespace sets another.
const DefaultNamespace = "hashedwheel"

// An Option configures NewCollector.
type Option func(*options)

type options struct {
	namespace string
	labels    prometheus.Labels
}

// WithNamespace sets the prefix of the metrics' names; "" leaves none.
func WithNamespace(namespace string) Option {
	return func(o *options) { o.namespace = namespace }
}

// WithConstLabels adds labels of fixed values to every metric, beside
// timer.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(o *options) {
		for k, v := range labels {
			o.labels[k] = v
		}
	}
}

var _ prometheus.Collector = (*Collector)(nil)

// Collector is a prometheus.Collector of one timer's Stats.
type Collector struct {
	source Source
	fields []hashedwheel.StatsField
	descs  []*prometheus.Desc
	types  []prometheus.ValueType
	// lateness is the histogram's description, nil for a source that is
	// not a LatenessSource.
	lateness *prometheus.Desc
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// NewCollector returns a Collector of timer's Stats whose metrics have
// the label timer=name. Register it with prometheus.Register or a
// Registry's Register; a second timer needs a name of its own. It fails,
// with an error wrapping hashedwheel.ErrInvalidOption that names the
// argument or option and its value, for an empty name, a nil timer, a
// namespace that is not a metric name's prefix, or a constant label that
// is not a label name or is timer.
func NewCollector(name string, timer Source, opts ...Option) (*Collector, error) {
	o := options{namespace: DefaultNamespace, labels: prometheus.Labels{}}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil Option", hashedwheel.ErrInvalidOption)
		}
		opt(&o)
	}
	switch {
	case name == "":
		return nil, fmt.Errorf("%w: NewCollector name %q: a timer needs a name", hashedwheel.ErrInvalidOption, name)
	case isNil(timer):
		return nil, fmt.Errorf("%w: NewCollector(%q) with a nil timer", hashedwheel.ErrInvalidOption, name)
	case o.namespace != "" && !metricName.MatchString(o.namespace):
		return nil, fmt.Errorf("%w: WithNamespace(%q): not a metric name", hashedwheel.ErrInvalidOption, o.namespace)
	}
	for k := range o.labels {
		if k == TimerLabel || !labelName.MatchString(k) || len(k) > 1 && k[:2] == "__" {
			return nil, fmt.Errorf("%w: WithConstLabels label %q: not a label name of its own", hashedwheel.ErrInvalidOption, k)
		}
	}
	o.labels[TimerLabel] = name
	c := &Collector{source: timer, fields: hashedwheel.StatsFields()}
	for _, f := range c.fields {
		metric, typ := f.Name, prometheus.GaugeValue
		if f.Unit == "s" {
			metric += "_seconds"
		}
		if f.Counter {
			metric, typ = metric+"_total", prometheus.CounterValue
		}
		c.descs = append(c.descs, prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", metric), f.Help, nil, o.labels))
		c.types = append(c.types, typ)
	}
	if _, ok := timer.(LatenessSource); ok {
		c.lateness = prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", "lateness_seconds"),
			"How late tasks started after their deadlines (part total), split into hand_over, from the deadline to the worker's hand-over of its tick to the executor, and hand_off, from the hand-over to the start: the wait for a goroutine.",
			[]string{PartLabel}, o.labels)
	}
	return c, nil
}

// Describe sends the descriptions of the metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	if c.lateness != nil {
		ch <- c.lateness
	}
}

// Collect reads the timer's Stats, once, and its Lateness, once, for a
// LatenessSource, and sends every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.source.Stats()
	for i, f := range c.fields {
		ch <- prometheus.MustNewConstMetric(c.descs[i], c.types[i], f.Value(s))
	}
	if c.lateness != nil {
		l := c.source.(LatenessSource).Lateness()
		ch <- newHistogram(c.lateness, l.Total, "total")
		ch <- newHistogram(c.lateness, l.HandOver, "hand_over")
		ch <- newHistogram(c.lateness, l.HandOff, "hand_off")
	}
}

// isNil reports whether timer is nil, or a nil pointer in an interface.
func isNil(timer Source) bool {
	if timer == nil {
		return true
	}
	v := reflect.ValueOf(timer)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
