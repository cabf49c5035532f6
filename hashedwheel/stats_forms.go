package hashedwheel

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strconv"
	"time"
)

// A StatsField describes one field of Stats for metrics exporters.
type StatsField struct {
	Name string // in snake_case, without its unit: "max_tick_lag"
	Help string // what the field counts or measures, in a sentence
	// Unit is the UCUM unit, for OpenTelemetry: "s" for seconds, else a
	// count's annotation, as "{timeout}".
	Unit    string
	Counter bool                  // true for a total that only grows, false for a gauge
	Value   func(s Stats) float64 // returns the field of s in its unit: seconds for a duration
}

// StatsFields describes every field of Stats, in order.
func StatsFields() []StatsField {
	fields := []StatsField{
		{"pending", "Timeouts scheduled that have neither expired, been cancelled nor been returned by Stop; a periodic timeout counts once.", "{timeout}", false, nil},
		{"scheduled", "Timeouts accepted: by NewTimeout, AfterFunc, Every, ScheduleFunc, and for the contexts a timeout of the wheel keeps.", "{timeout}", true, nil},
		{"expired", "Timeouts claimed for running.", "{timeout}", true, nil},
		{"cancelled", "Cancels that succeeded, and contexts and channel timers whose deadline Stop moved to the clock's timers.", "{timeout}", true, nil},
		{"returned_by_stop", "Timeouts Stop cancelled and returned.", "{timeout}", true, nil},
		{"resets", "Resets that returned true.", "{reset}", true, nil},
		{"resets_during_run", "Resets that found a run of their periodic timeout in progress, which completes.", "{reset}", true, nil},
		{"periodic_runs", "Runs of periodic timeouts started.", "{run}", true, nil},
		{"periodic_skipped", "Runs of periodic timeouts skipped: due while another waited to start, revoked by a Reset, or missed by a late worker.", "{run}", true, nil},
		{"schedule_errors", "Schedules of ScheduleFunc ended because Next returned a time not after its argument, or panicked.", "{schedule}", true, nil},
		{"rejected_full", "Timeouts refused at the pending limit (ErrTooManyPendingTimeouts, or a context's fallback).", "{timeout}", true, nil},
		{"rejected_stopped", "Timeouts refused because the timer was stopped (ErrStopped, or a context's fallback).", "{timeout}", true, nil},
		{"executor_failures", "Times the executor refused expired tasks or panicked taking them; they then ran on a goroutine of their own.", "{failure}", true, nil},
		{"context_fallbacks", "Contexts whose deadline a runtime timer keeps instead of the wheel: made while stopped or full, or live at Stop.", "{context}", true, nil},
		{"chan_fallbacks", "Channel timer armings the clock's own timers keep instead of the wheel: made while stopped or full, or live at Stop.", "{timer}", true, nil},
		{"task_panics", "Tasks that panicked.", "{panic}", true, nil},
		{"hook_panics", "Cancelled hooks that panicked.", "{panic}", true, nil},
		{"goexits", "Tasks and Cancelled hooks that called runtime.Goexit.", "{call}", true, nil},
		{"ticks", "Ticks the worker has processed.", "{tick}", true, nil},
		{"max_tick_lag", "Longest the worker has been late for a tick, in seconds.", "s", false, nil},
		{"lateness_p50", "Median of how late tasks started after their deadlines, in seconds, to within 19% above.", "s", false, nil},
		{"lateness_p99", "99th percentile of how late tasks started after their deadlines, in seconds, to within 19% above.", "s", false, nil},
		{"max_lateness", "Longest a task started after its deadline, in seconds.", "s", false, nil},
		{"max_hand_off_wait", "Longest a task waited for a goroutine after the worker handed it over, in seconds.", "s", false, nil},
	}
	for i := range fields {
		fields[i].Value = func(s Stats) float64 {
			switch x := reflect.ValueOf(s).Field(i); {
			case x.Type() == reflect.TypeFor[time.Duration]():
				return time.Duration(x.Int()).Seconds()
			case x.CanInt():
				return float64(x.Int())
			default:
				return float64(x.Uint())
			}
		}
	}
	return fields
}

// LogValue logs the snapshot as a group of its fields, named as in its
// JSON form, durations in seconds.
func (s Stats) LogValue() slog.Value {
	fields := StatsFields()
	attrs := make([]slog.Attr, len(fields))
	for i, f := range fields {
		if f.Unit == "s" {
			attrs[i] = slog.Float64(f.jsonName(), f.Value(s))
		} else {
			attrs[i] = slog.Int64(f.jsonName(), int64(f.Value(s)))
		}
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON encodes the snapshot as an object of its fields, as
// StatsFields names them, a duration in seconds with "_seconds" after its
// name: {"pending":3,…,"max_tick_lag_seconds":0.0012}.
func (s Stats) MarshalJSON() ([]byte, error) {
	v := reflect.ValueOf(s)
	b := []byte{'{'}
	for i, f := range StatsFields() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(strconv.AppendQuote(b, f.jsonName()), ':')
		if f.Unit == "s" {
			b = strconv.AppendFloat(b, f.Value(s), 'g', -1, 64)
		} else {
			b = fmt.Append(b, v.Field(i).Interface()) // a count, exactly
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes MarshalJSON's form, a duration rounded to the
// nanosecond, a missing field zero.
func (s *Stats) UnmarshalJSON(data []byte) error {
	var fields map[string]json.Number
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	*s = Stats{}
	v := reflect.ValueOf(s).Elem()
	for i, f := range StatsFields() {
		n, ok := fields[f.jsonName()]
		if !ok {
			continue
		}
		x := v.Field(i)
		var err error
		if f.Unit == "s" {
			var sec float64
			sec, err = n.Float64()
			x.SetInt(int64(time.Duration(math.Round(sec * float64(time.Second)))))
		} else {
			err = json.Unmarshal([]byte(n), x.Addr().Interface()) // a count, exactly
		}
		if err != nil {
			return fmt.Errorf("hashedwheel: Stats field %s: %w", f.jsonName(), err)
		}
	}
	return nil
}

func (f StatsField) jsonName() string {
	if f.Unit == "s" {
		return f.Name + "_seconds"
	}
	return f.Name
}
