package hashedwheel

import (
	"encoding/json"
	"log/slog"
	"math"
	"time"
)

// A StatsField describes one field of Stats for a metrics exporter, so
// that every exporter names, documents and converts the fields alike.
type StatsField struct {
	// Name is the field's name in snake_case, without its unit:
	// "scheduled", "max_tick_lag".
	Name string
	// Help says what the field counts or measures, in a sentence.
	Help string
	// Unit is the field's unit as UCUM writes it, as OpenTelemetry wants:
	// "s" for seconds, else a count's annotation, such as "{timeout}".
	Unit string
	// Counter is true for a total that only grows, false for a gauge.
	Counter bool
	// Value returns the field of s in its unit: seconds for a duration.
	Value func(s Stats) float64
}

// StatsFields returns a description of every field of Stats, in the
// order of the fields.
func StatsFields() []StatsField {
	return []StatsField{
		{"pending", "Timeouts scheduled that have neither expired, been cancelled nor been returned by Stop; a periodic timeout counts once.", "{timeout}", false,
			func(s Stats) float64 { return float64(s.Pending) }},
		{"scheduled", "Timeouts accepted: by NewTimeout, AfterFunc, Every, ScheduleFunc, and for the contexts a timeout of the wheel keeps.", "{timeout}", true,
			func(s Stats) float64 { return float64(s.Scheduled) }},
		{"expired", "Timeouts claimed for running.", "{timeout}", true,
			func(s Stats) float64 { return float64(s.Expired) }},
		{"cancelled", "Cancels that succeeded, and contexts and channel timers whose deadline Stop moved to the clock's timers.", "{timeout}", true,
			func(s Stats) float64 { return float64(s.Cancelled) }},
		{"returned_by_stop", "Timeouts Stop cancelled and returned.", "{timeout}", true,
			func(s Stats) float64 { return float64(s.ReturnedByStop) }},
		{"resets", "Resets that returned true.", "{reset}", true,
			func(s Stats) float64 { return float64(s.Resets) }},
		{"resets_during_run", "Resets that found a run of their periodic timeout in progress, which completes.", "{reset}", true,
			func(s Stats) float64 { return float64(s.ResetsDuringRun) }},
		{"periodic_runs", "Runs of periodic timeouts started.", "{run}", true,
			func(s Stats) float64 { return float64(s.PeriodicRuns) }},
		{"periodic_skipped", "Runs of periodic timeouts skipped: due while another waited to start, revoked by a Reset, or missed by a late worker.", "{run}", true,
			func(s Stats) float64 { return float64(s.PeriodicSkipped) }},
		{"schedule_errors", "Schedules of ScheduleFunc ended because Next returned a time not after its argument, or panicked.", "{schedule}", true,
			func(s Stats) float64 { return float64(s.ScheduleErrors) }},
		{"rejected_full", "Timeouts refused at the pending limit (ErrTooManyPendingTimeouts, or a context's fallback).", "{timeout}", true,
			func(s Stats) float64 { return float64(s.RejectedFull) }},
		{"rejected_stopped", "Timeouts refused because the timer was stopped (ErrStopped, or a context's fallback).", "{timeout}", true,
			func(s Stats) float64 { return float64(s.RejectedStopped) }},
		{"executor_failures", "Times the executor refused expired tasks or panicked taking them; they then ran on a goroutine of their own.", "{failure}", true,
			func(s Stats) float64 { return float64(s.ExecutorFailures) }},
		{"context_fallbacks", "Contexts whose deadline a runtime timer keeps instead of the wheel: made while stopped or full, or live at Stop.", "{context}", true,
			func(s Stats) float64 { return float64(s.ContextFallbacks) }},
		{"chan_fallbacks", "Channel timer armings the clock's own timers keep instead of the wheel: made while stopped or full, or live at Stop.", "{timer}", true,
			func(s Stats) float64 { return float64(s.ChanFallbacks) }},
		{"task_panics", "Tasks that panicked.", "{panic}", true,
			func(s Stats) float64 { return float64(s.TaskPanics) }},
		{"hook_panics", "Cancelled hooks that panicked.", "{panic}", true,
			func(s Stats) float64 { return float64(s.HookPanics) }},
		{"goexits", "Tasks and Cancelled hooks that called runtime.Goexit.", "{call}", true,
			func(s Stats) float64 { return float64(s.Goexits) }},
		{"ticks", "Ticks the worker has processed.", "{tick}", true,
			func(s Stats) float64 { return float64(s.Ticks) }},
		{"max_tick_lag", "Longest the worker has been late for a tick, in seconds.", "s", false,
			func(s Stats) float64 { return s.MaxTickLag.Seconds() }},
		{"hand_off_waits", "Tasks that started more than a tick after the worker handed them over: they waited for a goroutine.", "{task}", true,
			func(s Stats) float64 { return float64(s.HandOffWaits) }},
		{"max_hand_off_wait", "Longest a task waited for a goroutine after the worker handed it over, in seconds.", "s", false,
			func(s Stats) float64 { return s.MaxHandOffWait.Seconds() }},
	}
}

// LogValue logs the snapshot as a group of its fields, as StatsFields
// names them, MaxTickLag as max_tick_lag_seconds: a JSON handler would
// otherwise print a Duration as a bare count of nanoseconds.
func (s Stats) LogValue() slog.Value {
	fields := StatsFields()
	attrs := make([]slog.Attr, len(fields))
	for i, f := range fields {
		if f.Unit == "s" {
			attrs[i] = slog.Float64(f.Name+"_seconds", f.Value(s))
		} else {
			attrs[i] = slog.Int64(f.Name, int64(f.Value(s)))
		}
	}
	return slog.GroupValue(attrs...)
}

// statsJSON is the JSON form of Stats: snake_case names, a duration in
// seconds with the unit in its name.
type statsJSON struct {
	Pending           int64   `json:"pending"`
	Scheduled         uint64  `json:"scheduled"`
	Expired           uint64  `json:"expired"`
	Cancelled         uint64  `json:"cancelled"`
	ReturnedByStop    uint64  `json:"returned_by_stop"`
	Resets            uint64  `json:"resets"`
	ResetsDuringRun   uint64  `json:"resets_during_run"`
	PeriodicRuns      uint64  `json:"periodic_runs"`
	PeriodicSkipped   uint64  `json:"periodic_skipped"`
	ScheduleErrors    uint64  `json:"schedule_errors"`
	RejectedFull      uint64  `json:"rejected_full"`
	RejectedStopped   uint64  `json:"rejected_stopped"`
	ExecutorFailures  uint64  `json:"executor_failures"`
	ContextFallbacks  uint64  `json:"context_fallbacks"`
	ChanFallbacks     uint64  `json:"chan_fallbacks"`
	TaskPanics        uint64  `json:"task_panics"`
	HookPanics        uint64  `json:"hook_panics"`
	Goexits           uint64  `json:"goexits"`
	Ticks             uint64  `json:"ticks"`
	MaxTickLagSeconds float64 `json:"max_tick_lag_seconds"`
	HandOffWaits      uint64  `json:"hand_off_waits"`
	MaxHandOffWaitSec float64 `json:"max_hand_off_wait_seconds"`
}

// MarshalJSON encodes the snapshot as an object of its fields in
// snake_case, with MaxTickLag as max_tick_lag_seconds, a number of
// seconds: {"pending":3,"scheduled":10,…,"max_tick_lag_seconds":0.0012}.
// The names are StatsFields' names, with "_seconds" after a duration's.
func (s Stats) MarshalJSON() ([]byte, error) {
	return json.Marshal(statsJSON{
		s.Pending, s.Scheduled, s.Expired, s.Cancelled, s.ReturnedByStop,
		s.Resets, s.ResetsDuringRun, s.PeriodicRuns, s.PeriodicSkipped, s.ScheduleErrors,
		s.RejectedFull, s.RejectedStopped, s.ExecutorFailures, s.ContextFallbacks, s.ChanFallbacks,
		s.TaskPanics, s.HookPanics, s.Goexits, s.Ticks, s.MaxTickLag.Seconds(),
		s.HandOffWaits, s.MaxHandOffWait.Seconds(),
	})
}

// seconds converts a number of seconds to a Duration, rounded to the
// nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// UnmarshalJSON decodes the form MarshalJSON writes, MaxTickLag rounded
// to the nanosecond; a field it lacks is zero.
func (s *Stats) UnmarshalJSON(data []byte) error {
	var j statsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Stats{
		j.Pending, j.Scheduled, j.Expired, j.Cancelled, j.ReturnedByStop,
		j.Resets, j.ResetsDuringRun, j.PeriodicRuns, j.PeriodicSkipped, j.ScheduleErrors,
		j.RejectedFull, j.RejectedStopped, j.ExecutorFailures, j.ContextFallbacks, j.ChanFallbacks,
		j.TaskPanics, j.HookPanics, j.Goexits, j.Ticks,
		seconds(j.MaxTickLagSeconds), j.HandOffWaits, seconds(j.MaxHandOffWaitSec),
	}
	return nil
}
