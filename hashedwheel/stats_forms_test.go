package hashedwheel

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// distinctStats returns a Stats whose every field holds a value of its
// own: field i holds i+1, MaxTickLag (i+1)·250ms.
func distinctStats() Stats {
	var s Stats
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeFor[time.Duration]():
			f.SetInt(int64(i+1) * int64(250*time.Millisecond))
		case f.CanInt():
			f.SetInt(int64(i + 1))
		default:
			f.SetUint(uint64(i + 1))
		}
	}
	return s
}

// snakeCase turns a Go field name into its snake_case: MaxTickLag is
// max_tick_lag.
func snakeCase(name string) string {
	return strings.ToLower(regexp.MustCompile(`([a-z0-9])([A-Z])`).ReplaceAllString(name, "${1}_$2"))
}

// wantStatsNames returns the names of the fields of Stats in the JSON and
// log forms: snake_case, a duration's with _seconds.
func wantStatsNames() []string {
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Stats]()) {
		name := snakeCase(f.Name)
		if f.Type == reflect.TypeFor[time.Duration]() {
			name += "_seconds"
		}
		names = append(names, name)
	}
	return names
}

// TestStatsFieldsDescribeEveryField: StatsFields has one entry per field
// of Stats, in order, named after it, whose Value reads that field alone,
// a duration in seconds; only Pending and the durations are gauges.
func TestStatsFieldsDescribeEveryField(t *testing.T) {
	fields := reflect.VisibleFields(reflect.TypeFor[Stats]())
	described := StatsFields()
	require.Len(t, described, len(fields), "one StatsField per field of Stats")
	for i, f := range fields {
		d := described[i]
		require.Equal(t, snakeCase(f.Name), d.Name, "field %s", f.Name)
		require.NotEmpty(t, d.Help, "help of %s", d.Name)
		gauge := f.Name == "Pending" || f.Type == reflect.TypeFor[time.Duration]()
		require.Equal(t, !gauge, d.Counter, "Counter of %s", d.Name)
		var only Stats
		v := reflect.ValueOf(&only).Elem().Field(i)
		if f.Type == reflect.TypeFor[time.Duration]() {
			require.Equal(t, "s", d.Unit, "unit of %s", d.Name)
			v.SetInt(int64(1500 * time.Millisecond))
			require.Equal(t, 1.5, d.Value(only), "%s in seconds", d.Name)
		} else {
			require.Regexp(t, `^\{[a-z]+\}$`, d.Unit, "unit of %s", d.Name)
			if v.CanInt() {
				v.SetInt(7)
			} else {
				v.SetUint(7)
			}
			require.Equal(t, 7.0, d.Value(only), "%s", d.Name)
		}
		for j, other := range described {
			if j != i {
				require.Zero(t, other.Value(only), "%s reads %s", other.Name, f.Name)
			}
		}
	}
}

// TestStatsJSONNamesCarryUnits: the JSON form names each field in
// snake_case, MaxTickLag as max_tick_lag_seconds in seconds, and decodes
// back to the same Stats.
func TestStatsJSONNamesCarryUnits(t *testing.T) {
	s := distinctStats()
	data, err := json.Marshal(s)
	require.NoError(t, err)
	var m map[string]float64
	require.NoError(t, json.Unmarshal(data, &m))
	require.Len(t, m, len(wantStatsNames()), "%s", data)
	for i, name := range wantStatsNames() {
		want := float64(i + 1)
		if strings.HasSuffix(name, "_seconds") {
			want *= 0.25
		}
		require.Equal(t, want, m[name], "%s in %s", name, data)
	}

	var back Stats
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, s, back, "decoded JSON form")
	// Through a pointer and inside another value, as expvar and loggers
	// encode it.
	wrapped, err := json.Marshal(map[string]any{"timer": &s})
	require.NoError(t, err)
	require.Equal(t, `{"timer":`+string(data)+`}`, string(wrapped))
	require.Error(t, json.Unmarshal([]byte(`{"pending":"many"}`), &back))
}

// TestStatsLogValue: logged through a JSON handler, Stats is a group of
// its fields under the same names as its JSON form, with the tick lag in
// seconds, not a bare count of nanoseconds.
func TestStatsLogValue(t *testing.T) {
	var _ slog.LogValuer = Stats{}
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	s := distinctStats()
	logger.InfoContext(context.Background(), "timer", "stats", s)
	var line struct {
		Stats map[string]float64 `json:"stats"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line), "%s", buf.String())
	var fromJSON map[string]float64
	data, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &fromJSON))
	require.Equal(t, fromJSON, line.Stats, "logged group vs JSON form")

	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("timer", "stats", s)
	require.Contains(t, buf.String(), " stats.pending=1 stats.scheduled=2 ")
	require.Contains(t, buf.String(), " stats.max_hand_off_wait_seconds=")
}

// TestStatsStringNamesEveryField: String gives every field, under the
// JSON form's names, a duration with its unit.
func TestStatsStringNamesEveryField(t *testing.T) {
	str := distinctStats().String()
	for i, name := range wantStatsNames() {
		if n, ok := strings.CutSuffix(name, "_seconds"); ok {
			d := time.Duration(i+1) * 250 * time.Millisecond
			require.Regexp(t, `(^| )`+n+`=`+regexp.QuoteMeta(d.String())+`( |$)`, str, "String() = %s", str)
			continue
		}
		require.Regexp(t, `(^| )`+name+`=`+strconv.Itoa(i+1)+`( |$)`, str)
	}
}
