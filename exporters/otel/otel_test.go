package otel_test

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wheeltimer/wheeltimer/clock"
	wheelotel "github.com/wheeltimer/wheeltimer/exporters/otel"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
	"github.com/wheeltimer/wheeltimer/pool"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// fixed is a Source whose Stats never change.
type fixed hashedwheel.Stats

func (f fixed) Stats() hashedwheel.Stats { return hashedwheel.Stats(f) }

// numbered returns Stats whose field i holds i+1, a duration 1.5s.
func numbered() hashedwheel.Stats {
	var s hashedwheel.Stats
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); {
		case f.Type() == reflect.TypeFor[time.Duration]():
			f.SetInt(int64(1500 * time.Millisecond))
		case f.CanUint():
			f.SetUint(uint64(i + 1))
		default:
			f.SetInt(int64(i + 1))
		}
	}
	return s
}

// newReader returns a ManualReader and a meter of a provider it reads;
// the provider is shut down when the test ends.
func newReader(t *testing.T) (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, provider.Shutdown(context.Background())) })
	return reader, provider
}

// collect reads the metrics: instrument name → its data.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// points returns the values of m's data points by their timer
// attribute, and checks its kind: a monotonic cumulative sum for a
// counter, a non-monotonic one for a count that goes up and down
// (Pending), a gauge for a duration.
func points(t *testing.T, m metricdata.Metrics, counter bool) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	timerOf := func(set attribute.Set) string {
		v, ok := set.Value(wheelotel.TimerAttribute)
		require.True(t, ok, "%s: a point without a timer", m.Name)
		require.Equal(t, 1, set.Len(), "%s: attributes %v", m.Name, set)
		return v.AsString()
	}
	switch data := m.Data.(type) {
	case metricdata.Sum[int64]:
		require.Equal(t, counter, data.IsMonotonic, "%s: monotonic for a counter, an up-down counter otherwise", m.Name)
		require.Equal(t, metricdata.CumulativeTemporality, data.Temporality, m.Name)
		for _, p := range data.DataPoints {
			got[timerOf(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Gauge[float64]:
		require.False(t, counter, "%s is a gauge", m.Name)
		require.Equal(t, "s", m.Unit, "%s: only a duration is a gauge", m.Name)
		for _, p := range data.DataPoints {
			got[timerOf(p.Attributes)] = p.Value
		}
	default:
		t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
	}
	return got
}

// TestRegisterReportsEveryFieldOfEachTimer: through the SDK's
// ManualReader, two timers registered on one meter report every field of
// Stats, with its description and unit, a duration in seconds, each
// under its timer attribute; after Unregister only the other reports.
func TestRegisterReportsEveryFieldOfEachTimer(t *testing.T) {
	reader, provider := newReader(t)
	meter := provider.Meter("github.com/wheeltimer/wheeltimer/exporters/otel/test")

	fake := clock.NewFake(time.Now())
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake), hashedwheel.WithExecutor(pool.Inline),
		hashedwheel.WithTickDuration(10*time.Millisecond), hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer timer.Stop()
	for range 3 {
		_, err := timer.AfterFunc(5*time.Millisecond, func() {})
		require.NoError(t, err)
	}
	_, err = timer.AfterFunc(time.Hour, func() {})
	require.NoError(t, err)
	fake.WaitAsleep()
	fake.Advance(20 * time.Millisecond)
	fake.WaitAsleep()

	other := numbered()
	orders, err := wheelotel.Register(meter, "orders", timer)
	require.NoError(t, err)
	sessions, err := wheelotel.Register(meter, "sessions", fixed(other))
	require.NoError(t, err)

	got := collect(t, reader)
	fields := hashedwheel.StatsFields()
	require.Len(t, got, len(fields), "one instrument per field of Stats")
	stats := map[string]hashedwheel.Stats{"orders": timer.Stats(), "sessions": other}
	require.Equal(t, uint64(3), stats["orders"].Expired)
	require.Equal(t, int64(1), stats["orders"].Pending)
	for i, f := range fields {
		m, ok := got["hashedwheel."+f.Name]
		require.True(t, ok, "no instrument hashedwheel.%s", f.Name)
		require.Equal(t, f.Help, m.Description)
		require.Equal(t, f.Unit, m.Unit)
		values := points(t, m, f.Counter)
		require.Equal(t, map[string]float64{"orders": f.Value(stats["orders"]), "sessions": f.Value(other)}, values, m.Name)
		if f.Unit == "s" {
			require.Equal(t, 1.5, values["sessions"], "%s in seconds", m.Name)
		} else {
			require.Equal(t, float64(i+1), values["sessions"], m.Name)
		}
	}

	require.NoError(t, sessions.Unregister())
	for name, m := range collect(t, reader) {
		f := fields[0]
		for _, g := range fields {
			if "hashedwheel."+g.Name == name {
				f = g
			}
		}
		require.Equal(t, []string{"orders"}, keys(points(t, m, f.Counter)), "%s after Unregister", name)
	}
	require.NoError(t, orders.Unregister())
}

func keys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestRegisterRefusesInvalidArguments, naming each.
func TestRegisterRefusesInvalidArguments(t *testing.T) {
	_, provider := newReader(t)
	meter := provider.Meter("test")
	var nilTimer *hashedwheel.HashedWheelTimer
	for _, tc := range []struct {
		name  string
		timer wheelotel.Source
		want  string
	}{
		{"", fixed{}, `name ""`},
		{"a", nil, "nil timer"},
		{"a", nilTimer, "nil timer"},
	} {
		_, err := wheelotel.Register(meter, tc.name, tc.timer)
		require.ErrorIs(t, err, hashedwheel.ErrInvalidOption)
		require.Contains(t, err.Error(), tc.want)
	}
	_, err := wheelotel.Register(nil, "a", fixed{})
	require.ErrorIs(t, err, hashedwheel.ErrInvalidOption)
	require.Contains(t, err.Error(), "nil meter")
}

// TestRegisterRefusesANameItServes: a second Register of a name on one
// meter fails with ErrNameTaken, for another timer or the same one, so
// that the meter never sums two timers' observations into one series;
// another meter, or the name once unregistered, takes it.
func TestRegisterRefusesANameItServes(t *testing.T) {
	reader, provider := newReader(t)
	meter := provider.Meter("test")
	first, err := wheelotel.Register(meter, "orders", fixed{Scheduled: 10})
	require.NoError(t, err)
	for _, second := range []wheelotel.Source{fixed{Scheduled: 5}, fixed{Scheduled: 10}} {
		_, err = wheelotel.Register(meter, "orders", second)
		require.ErrorIs(t, err, wheelotel.ErrNameTaken)
		require.Contains(t, err.Error(), `"orders"`)
	}
	require.Equal(t, map[string]float64{"orders": 10}, points(t, collect(t, reader)["hashedwheel.scheduled"], true),
		"the first timer's count, not a sum")

	_, otherProvider := newReader(t)
	elsewhere, err := wheelotel.Register(otherProvider.Meter("test"), "orders", fixed{Scheduled: 5})
	require.NoError(t, err, "another meter")
	require.NoError(t, elsewhere.Unregister())

	require.NoError(t, first.Unregister())
	again, err := wheelotel.Register(meter, "orders", fixed{Scheduled: 5})
	require.NoError(t, err, "free once unregistered")
	require.Equal(t, map[string]float64{"orders": 5}, points(t, collect(t, reader)["hashedwheel.scheduled"], true))
	require.NoError(t, again.Unregister())
	require.NoError(t, again.Unregister(), "idempotent, as the SDK's")
}
