package otel_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wheeltimer/wheeltimer/clock"
	wheelotel "github.com/wheeltimer/wheeltimer/exporters/otel"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// fixedLateness is a LatenessSource whose Lateness never changes.
type fixedLateness hashedwheel.Lateness

func (f fixedLateness) Lateness() hashedwheel.Lateness { return hashedwheel.Lateness(f) }

// lateTimer returns a started timer on a fake clock, running its tasks
// inline, whose tasks have run a known amount late, and those amounts by
// part. On a 10ms tick, the tasks of the first tick run at 10ms in
// deadline order: one due at 3ms, 7ms late; one due at 4ms, 6ms late,
// which moves the clock 2s on; one due at 9ms, handed over 1ms late,
// which waits for the one before it for 2s. The worker, 2s late for the
// second tick, hands over the task due at 15ms at 2.01s, 1.995s late.
func lateTimer(t *testing.T) (*hashedwheel.HashedWheelTimer, map[string][]time.Duration) {
	t.Helper()
	fake := clock.NewFake(time.Now())
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake), hashedwheel.WithExecutor(pool.Inline),
		hashedwheel.WithTickDuration(10*time.Millisecond), hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, timer.Start())
	t.Cleanup(func() { timer.Stop() })
	for _, task := range []struct {
		delay time.Duration
		run   func()
	}{
		{3 * time.Millisecond, func() {}},
		{4 * time.Millisecond, func() { fake.Jump(2 * time.Second) }},
		{9 * time.Millisecond, func() {}},
		{15 * time.Millisecond, func() {}},
	} {
		_, err := timer.AfterFunc(task.delay, task.run)
		require.NoError(t, err)
	}
	fake.WaitAsleep()
	fake.Advance(20 * time.Millisecond)
	fake.WaitAsleep()
	ms := time.Millisecond
	return timer, map[string][]time.Duration{
		"total":     {7 * ms, 6 * ms, 2001 * ms, 1995 * ms},
		"hand_over": {7 * ms, 6 * ms, 1 * ms, 1995 * ms},
		"hand_off":  {0, 0, 2 * time.Second, 0},
	}
}

// latenessPoints collects the reader's metrics and returns the data
// points of the lateness histogram by timer and part, checking the
// metric's scope, unit and temporality; nil if there is none.
func latenessPoints(t *testing.T, reader *sdkmetric.ManualReader) map[[2]string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var got map[[2]string]metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != wheelotel.LatenessMetric {
				continue
			}
			require.Nil(t, got, "one lateness metric")
			require.Equal(t, wheelotel.ScopeName, sm.Scope.Name)
			require.Equal(t, "s", m.Unit)
			require.NotEmpty(t, m.Description)
			data, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "%T", m.Data)
			require.Equal(t, metricdata.CumulativeTemporality, data.Temporality)
			got = map[[2]string]metricdata.HistogramDataPoint[float64]{}
			for _, p := range data.DataPoints {
				timer, _ := p.Attributes.Value(wheelotel.TimerAttribute)
				part, _ := p.Attributes.Value(wheelotel.PartAttribute)
				require.Equal(t, 2, p.Attributes.Len(), "%v", p.Attributes)
				got[[2]string{timer.AsString(), part.AsString()}] = p
			}
		}
	}
	return got
}

// checkPoint checks a data point against the durations it counted: each
// in the bucket its explicit bounds give it, the sum and the max.
func checkPoint(t *testing.T, p metricdata.HistogramDataPoint[float64], durations []time.Duration) {
	t.Helper()
	require.Len(t, p.Bounds, hashedwheel.HistogramBuckets-1)
	for i, b := range p.Bounds {
		require.Equal(t, hashedwheel.HistogramBound(i).Seconds(), b)
	}
	want := make([]uint64, len(p.Bounds)+1)
	var sum, longest time.Duration
	for _, d := range durations {
		i := 0
		for i < len(p.Bounds) && d.Seconds() > p.Bounds[i] {
			i++
		}
		want[i]++
		sum += d
		longest = max(longest, d)
	}
	require.Equal(t, want, p.BucketCounts)
	require.Equal(t, uint64(len(durations)), p.Count)
	require.InDelta(t, sum.Seconds(), p.Sum, 1e-9)
	top, ok := p.Max.Value()
	require.True(t, ok)
	require.Equal(t, longest.Seconds(), top)
	_, ok = p.Min.Value()
	require.False(t, ok, "no min")
	require.False(t, p.StartTime.IsZero())
	require.False(t, p.Time.Before(p.StartTime))
}

// TestProducerReportsEachTimersLateness: through the SDK's ManualReader,
// a Producer given to the reader reports the lateness of each timer
// registered on it, a data point per part, beside the instruments of
// Register; after Unregister only the other timer's, and after the last
// none.
func TestProducerReportsEachTimersLateness(t *testing.T) {
	producer := wheelotel.NewProducer()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(producer))
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, provider.Shutdown(context.Background())) }()
	require.Nil(t, latenessPoints(t, reader), "no timer registered")

	timer, want := lateTimer(t)
	stats, err := wheelotel.Register(provider.Meter("test"), "orders", timer)
	require.NoError(t, err)
	defer stats.Unregister()
	orders, err := producer.Register("orders", timer)
	require.NoError(t, err)
	var other hashedwheel.Lateness
	other.HandOff.Counts[hashedwheel.HistogramBuckets-1] = 2 // beyond 64s
	other.HandOff.Sum, other.HandOff.Max = 200*time.Second, 120*time.Second
	sessions, err := producer.Register("sessions", fixedLateness(other))
	require.NoError(t, err)

	got := latenessPoints(t, reader)
	require.Len(t, got, 6)
	for part, durations := range want {
		t.Run(part, func(t *testing.T) { checkPoint(t, got[[2]string{"orders", part}], durations) })
	}
	beyond := got[[2]string{"sessions", "hand_off"}]
	require.Equal(t, uint64(2), beyond.BucketCounts[len(beyond.BucketCounts)-1], "the implied +Inf bucket")
	require.Equal(t, 200.0, beyond.Sum)
	require.Equal(t, uint64(0), got[[2]string{"sessions", "total"}].Count)
	_, ok := got[[2]string{"sessions", "total"}].Max.Value()
	require.False(t, ok, "no max of an empty histogram")

	require.NoError(t, sessions.Unregister())
	require.NoError(t, sessions.Unregister(), "idempotent")
	got = latenessPoints(t, reader)
	require.Len(t, got, 3)
	for part := range want {
		require.Contains(t, got, [2]string{"orders", part})
	}
	require.NoError(t, orders.Unregister())
	require.Nil(t, latenessPoints(t, reader))
}

// TestProducerRefusesANameItServes: a second Register of a name on one
// Producer fails with ErrNameTaken, and frees once unregistered; a
// Registration unregistered late leaves the name's next timer alone.
func TestProducerRefusesANameItServes(t *testing.T) {
	producer := wheelotel.NewProducer()
	first, err := producer.Register("orders", fixedLateness{})
	require.NoError(t, err)
	_, err = producer.Register("orders", fixedLateness{})
	require.ErrorIs(t, err, wheelotel.ErrNameTaken)
	require.Contains(t, err.Error(), `"orders"`)
	require.NoError(t, first.Unregister())
	var l hashedwheel.Lateness
	l.Total.Counts[80] = 1
	second, err := producer.Register("orders", fixedLateness(l))
	require.NoError(t, err, "free once unregistered")
	require.NoError(t, first.Unregister(), "the first's, again")
	scopes, err := producer.Produce(context.Background())
	require.NoError(t, err)
	require.Len(t, scopes, 1)
	data := scopes[0].Metrics[0].Data.(metricdata.Histogram[float64])
	require.Len(t, data.DataPoints, 3, "the second timer still reports")
	require.Equal(t, attribute.NewSet(attribute.String(wheelotel.TimerAttribute, "orders"),
		attribute.String(wheelotel.PartAttribute, "total")), data.DataPoints[0].Attributes)
	require.Equal(t, uint64(1), data.DataPoints[0].Count)
	require.NoError(t, second.Unregister())
}

// TestProducerRegisterRefusesInvalidArguments, naming each.
func TestProducerRegisterRefusesInvalidArguments(t *testing.T) {
	producer := wheelotel.NewProducer()
	var nilTimer *hashedwheel.HashedWheelTimer
	for _, tc := range []struct {
		name  string
		timer wheelotel.LatenessSource
		want  string
	}{
		{"", fixedLateness{}, `name ""`},
		{"a", nil, "nil timer"},
		{"a", nilTimer, "nil timer"},
	} {
		_, err := producer.Register(tc.name, tc.timer)
		require.ErrorIs(t, err, hashedwheel.ErrInvalidOption)
		require.Contains(t, err.Error(), tc.want)
	}
}
