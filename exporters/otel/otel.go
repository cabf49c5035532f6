// Package otel exports the Stats of a wheeltimer timer as OpenTelemetry
// metrics: observable instruments of a metric.Meter, read once per
// collection.
//
// Every field of hashedwheel.Stats (hashedwheel.StatsFields) is an
// instrument named hashedwheel.field, with its description and unit
// ("s" for a duration, in seconds; "{timeout}" and the like for a count):
// an Int64ObservableCounter for a total that only grows, an
// Int64ObservableUpDownCounter for Pending, a count that goes up and down,
// and a Float64ObservableGauge for each duration, as MaxTickLag. Each
// observation has the attribute timer=name, so that several timers report
// through one meter side by side; a name serves one timer per meter.
//
// A timer's Lateness is the histogram hashedwheel.lateness, with the
// attribute part beside timer. The API has no observable histogram, so a
// Producer, of the SDK's metric package, reports it: see Producer.
//
// Beside go.opentelemetry.io/otel, import it under another name, as
// wheelotel.
package otel

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// Source is what Register reads: a *hashedwheel.HashedWheelTimer, or
// anything else with its Stats method.
type Source interface {
	Stats() hashedwheel.Stats
}

// TimerAttribute is the attribute naming the timer of each observation.
const TimerAttribute = "timer"

// Prefix is the start of every instrument's name.
const Prefix = "hashedwheel."

// Register makes, or finds, the instruments of meter for every field of
// Stats, and registers a callback that reads timer's Stats once per
// collection and observes each field with the attribute timer=name.
// Unregister the returned Registration to stop reporting the timer and
// free its name; the instruments stay, for other timers. It fails with an
// error wrapping ErrNameTaken for a name under which a timer is already
// registered on meter, whose observations the meter would add to this
// one's; with an error wrapping hashedwheel.ErrInvalidOption for a nil
// meter, an empty name or a nil timer; and with the meter's error if it
// refuses an instrument.
func Register(meter metric.Meter, name string, timer Source) (metric.Registration, error) {
	switch {
	case meter == nil:
		return nil, fmt.Errorf("%w: Register(%q) with a nil meter", hashedwheel.ErrInvalidOption, name)
	case name == "":
		return nil, fmt.Errorf("%w: Register name %q: a timer needs a name", hashedwheel.ErrInvalidOption, name)
	case isNil(timer):
		return nil, fmt.Errorf("%w: Register(%q) with a nil timer", hashedwheel.ErrInvalidOption, name)
	}
	release, err := reserve(meter, name)
	if err != nil {
		return nil, err
	}
	reg, err := register(meter, name, timer)
	if err != nil {
		release()
		return nil, err
	}
	return &registration{Registration: reg, release: release}, nil
}

// register makes, or finds, the instruments and registers the callback
// that observes timer under name.
func register(meter metric.Meter, name string, timer Source) (metric.Registration, error) {
	labelled := metric.WithAttributeSet(attribute.NewSet(attribute.String(TimerAttribute, name)))
	fields := hashedwheel.StatsFields()
	observe := make([]func(metric.Observer, hashedwheel.Stats), len(fields))
	instruments := make([]metric.Observable, len(fields))
	var errs []error
	for i, f := range fields {
		desc, unit := metric.WithDescription(f.Help), metric.WithUnit(f.Unit)
		var err error
		switch {
		case f.Unit == "s":
			var g metric.Float64ObservableGauge
			g, err = meter.Float64ObservableGauge(Prefix+f.Name, desc, unit)
			instruments[i] = g
			observe[i] = func(o metric.Observer, s hashedwheel.Stats) { o.ObserveFloat64(g, f.Value(s), labelled) }
		case f.Counter:
			var c metric.Int64ObservableCounter
			c, err = meter.Int64ObservableCounter(Prefix+f.Name, desc, unit)
			instruments[i] = c
			observe[i] = func(o metric.Observer, s hashedwheel.Stats) { o.ObserveInt64(c, int64(f.Value(s)), labelled) }
		default: // a count that goes up and down: Pending
			var u metric.Int64ObservableUpDownCounter
			u, err = meter.Int64ObservableUpDownCounter(Prefix+f.Name, desc, unit)
			instruments[i] = u
			observe[i] = func(o metric.Observer, s hashedwheel.Stats) { o.ObserveInt64(u, int64(f.Value(s)), labelled) }
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// One callback per timer: its Stats are read once per collection.
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := timer.Stats()
		for _, obs := range observe {
			obs(o, s)
		}
		return nil
	}, instruments...)
}

// isNil reports whether timer is nil, or a nil pointer in an interface.
func isNil(timer any) bool {
	if timer == nil {
		return true
	}
	v := reflect.ValueOf(timer)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
