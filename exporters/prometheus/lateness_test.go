package prometheus_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	wheelprom "github.com/wheeltimer/wheeltimer/exporters/prometheus"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// withLateness is a LatenessSource whose Stats and Lateness never change.
type withLateness struct {
	fixed
	lateness hashedwheel.Lateness
}

func (w withLateness) Lateness() hashedwheel.Lateness { return w.lateness }

// classicBounds are the classic buckets' bounds: 2^k seconds, k from -20
// to 6.
func classicBounds() []float64 {
	var bounds []float64
	for k := -20; k <= 6; k++ {
		bounds = append(bounds, math.Ldexp(1, k))
	}
	return bounds
}

// TestHistogramLayoutIsTheExportersOwn: the buckets of a
// hashedwheel.Histogram are those the exporter writes: the zero bucket
// ending at 2^-20 s, and one bucket in four ending at a power of two.
func TestHistogramLayoutIsTheExportersOwn(t *testing.T) {
	require.Equal(t, 106, hashedwheel.HistogramBuckets)
	for k := -20; k <= 6; k++ {
		require.Equal(t, time.Duration(math.Ldexp(1e9, k)), hashedwheel.HistogramBound(80+4*k), "2^%d s", k)
	}
	require.Equal(t, time.Duration(math.Exp2(-79.0/4)*1e9), hashedwheel.HistogramBound(1))
}

// lateTimer returns a started timer on a fake clock, running its tasks
// inline, whose tasks have run a known amount late, and those amounts.
// On a 10ms tick, the tasks of the first tick run at 10ms in deadline
// order: one due at 3ms, 7ms late; one due at 4ms, 6ms late, which moves
// the clock 2s on; one due at 9ms, handed over 1ms late, which waits for
// the one before it for 2s. The worker, 2s late for the second tick,
// hands over the task due at 15ms at 2.01s, 1.995s late.
func lateTimer(t *testing.T) (*hashedwheel.HashedWheelTimer, map[string][]time.Duration) {
	t.Helper()
	timer, fake := newFakeTimer(t)
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

// nativeIndex returns the native bucket of schema 2 of d, not in the zero
// bucket: the i for which d is in (2^((i-1)/4), 2^(i/4)] seconds.
func nativeIndex(d time.Duration) int {
	return int(math.Ceil(4 * math.Log2(d.Seconds())))
}

// nativeCounts decodes h's positive spans and deltas: index → count.
func nativeCounts(t *testing.T, h *dto.Histogram) map[int]uint64 {
	t.Helper()
	got := map[int]uint64{}
	var index int32
	var count int64
	d := h.GetPositiveDelta()
	for i, span := range h.GetPositiveSpan() {
		index += span.GetOffset()
		if i > 0 {
			require.Positive(t, span.GetOffset(), "spans apart")
		}
		for range span.GetLength() {
			require.NotEmpty(t, d, "a delta for each bucket of a span")
			count += d[0]
			d = d[1:]
			require.GreaterOrEqual(t, count, int64(0))
			if count > 0 {
				got[int(index)] = uint64(count)
			}
			index++
		}
	}
	require.Empty(t, d, "a bucket for each delta")
	return got
}

// checkSeries checks a series of the lateness histogram against the
// durations it counted: classic buckets at the powers of two, exact;
// the native histogram of schema 2 with each duration in its bucket.
func checkSeries(t *testing.T, m *dto.Metric, durations []time.Duration) {
	t.Helper()
	h := m.GetHistogram()
	require.NotNil(t, h)
	var sum time.Duration
	for _, d := range durations {
		sum += d
	}
	require.Equal(t, uint64(len(durations)), h.GetSampleCount())
	require.InDelta(t, sum.Seconds(), h.GetSampleSum(), 1e-9)

	bounds := classicBounds()
	require.Len(t, h.GetBucket(), len(bounds))
	for i, b := range h.GetBucket() {
		require.Equal(t, bounds[i], b.GetUpperBound())
		var want uint64
		for _, d := range durations {
			if d.Seconds() <= bounds[i] {
				want++
			}
		}
		require.Equal(t, want, b.GetCumulativeCount(), "le=%g", bounds[i])
	}

	require.Equal(t, int32(2), h.GetSchema())
	require.Equal(t, math.Ldexp(1, -20), h.GetZeroThreshold())
	var zero uint64
	native := map[int]uint64{}
	for _, d := range durations {
		if d.Seconds() <= h.GetZeroThreshold() {
			zero++
		} else {
			native[nativeIndex(d)]++
		}
	}
	require.Equal(t, zero, h.GetZeroCount())
	require.Equal(t, native, nativeCounts(t, h))
}

// series returns the series of family by their label part, each with the
// label timer="orders".
func series(t *testing.T, family *dto.MetricFamily) map[string]*dto.Metric {
	t.Helper()
	require.Equal(t, dto.MetricType_HISTOGRAM, family.GetType())
	got := map[string]*dto.Metric{}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		require.Equal(t, "orders", labels[wheelprom.TimerLabel])
		got[labels[wheelprom.PartLabel]] = m
	}
	return got
}

// TestLatenessIsANativeAndClassicHistogram: gathered from a registry, the
// lateness of a timer whose tasks ran a known amount late is one
// histogram family with a series per part, each carrying exact classic
// buckets at the powers of two and the native histogram of schema 2.
func TestLatenessIsANativeAndClassicHistogram(t *testing.T) {
	timer, want := lateTimer(t)
	reg := prometheus.NewPedanticRegistry()
	c, err := wheelprom.NewCollector("orders", timer)
	require.NoError(t, err)
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, len(hashedwheel.StatsFields())+1)
	var lateness *dto.MetricFamily
	for _, f := range families {
		if f.GetName() == "hashedwheel_lateness_seconds" {
			lateness = f
		}
	}
	require.NotNil(t, lateness)
	got := series(t, lateness)
	require.Len(t, got, 3)
	for part, durations := range want {
		t.Run(part, func(t *testing.T) { checkSeries(t, got[part], durations) })
	}
	s := timer.Stats()
	require.Equal(t, 2001*time.Millisecond, s.MaxLateness)
	require.Equal(t, 2*time.Second, s.MaxHandOffWait)
}

// TestLatenessScrapedOverHTTP: through promhttp, a text scrape shows the
// classic buckets, and a protobuf scrape, as a Prometheus server that
// takes native histograms asks for, carries the native histogram.
func TestLatenessScrapedOverHTTP(t *testing.T) {
	timer, want := lateTimer(t)
	mux, reg := http.NewServeMux(), prometheus.NewRegistry()
	require.NoError(t, serveMetrics(mux, reg, timer))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := scrape(t, srv.URL+"/metrics")
	t.Logf("GET /metrics, text:\n%s", body)
	require.Contains(t, body, "# TYPE hashedwheel_lateness_seconds histogram\n")
	for part, durations := range want {
		for _, le := range append(classicBounds(), math.Inf(1)) {
			var n int
			for _, d := range durations {
				if d.Seconds() <= le {
					n++
				}
			}
			require.Contains(t, body, fmt.Sprintf("hashedwheel_lateness_seconds_bucket{part=%q,timer=\"orders\",le=%q} %d\n",
				part, formatLe(le), n))
		}
		require.Contains(t, body, fmt.Sprintf("hashedwheel_lateness_seconds_count{part=%q,timer=\"orders\"} %d\n", part, len(durations)))
	}

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, expfmt.TypeProtoDelim, expfmt.ResponseFormat(resp.Header).FormatType())
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var found bool
	for {
		var family dto.MetricFamily
		if err := dec.Decode(&family); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		if family.GetName() != "hashedwheel_lateness_seconds" {
			continue
		}
		found = true
		got := series(t, &family)
		for part, durations := range want {
			checkSeries(t, got[part], durations)
		}
	}
	require.True(t, found, "the lateness histogram in the protobuf scrape")
}

// formatLe writes a bucket bound as the text format does.
func formatLe(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(le, 'g', -1, 64)
}

// TestLatenessNativeBuckets: the native buckets of histograms of given
// counts, a span for each run of buckets with counts, empty buckets
// within a run when two or fewer part them, and the durations beyond 64s
// in bucket 25, (64s, 76.1s]; the classic +Inf bucket counts them all.
func TestLatenessNativeBuckets(t *testing.T) {
	const last = hashedwheel.HistogramBuckets - 1
	for _, tc := range []struct {
		name   string
		counts map[int]uint64 // bucket → count
		spans  int
	}{
		{"empty", nil, 0},
		{"zero bucket only", map[int]uint64{0: 5}, 0},
		{"one bucket", map[int]uint64{84: 3}, 1},
		{"first and last", map[int]uint64{1: 1, last: 2}, 2},
		{"adjacent", map[int]uint64{40: 1, 41: 2, 42: 3}, 1},
		{"two apart", map[int]uint64{40: 1, 43: 2}, 1},
		{"three apart", map[int]uint64{40: 1, 44: 2}, 2},
		{"mixed", map[int]uint64{0: 1, 10: 4, 11: 1, 13: 2, 20: 7, 104: 1, last: 1}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hashedwheel.Histogram
			var total uint64
			want := map[int]uint64{}
			for i, c := range tc.counts {
				h.Counts[i] = c
				total += c
				if i > 0 {
					want[i-80] = c
				}
			}
			src := withLateness{lateness: hashedwheel.Lateness{Total: h, HandOver: h, HandOff: h}}
			c, err := wheelprom.NewCollector("orders", src)
			require.NoError(t, err)
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(c))
			families, err := reg.Gather()
			require.NoError(t, err)
			for _, f := range families {
				if f.GetName() != "hashedwheel_lateness_seconds" {
					continue
				}
				for part, m := range series(t, f) {
					hist := m.GetHistogram()
					require.Equal(t, want, nativeCounts(t, hist), part)
					require.Len(t, hist.GetPositiveSpan(), tc.spans, part)
					require.Equal(t, tc.counts[0], hist.GetZeroCount(), part)
					require.Equal(t, total, hist.GetSampleCount(), part)
					require.Equal(t, total-tc.counts[last], hist.GetBucket()[len(hist.GetBucket())-1].GetCumulativeCount(),
						"le=64: all but the last bucket's")
				}
				return
			}
			t.Fatal("no lateness histogram")
		})
	}
}

// TestStatsOnlySourceHasNoLatenessHistogram: a Source without Lateness
// exports its Stats alone.
func TestStatsOnlySourceHasNoLatenessHistogram(t *testing.T) {
	c, err := wheelprom.NewCollector("orders", fixed{})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, len(hashedwheel.StatsFields()))
	for _, f := range families {
		require.False(t, strings.HasPrefix(f.GetName(), "hashedwheel_lateness_seconds"), f.GetName())
	}
}
