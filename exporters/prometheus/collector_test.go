package prometheus_test

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	wheelprom "github.com/wheeltimer/wheeltimer/exporters/prometheus"
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

// newFakeTimer returns a started timer on a fake clock, running its tasks
// inline, and the clock; the timer is stopped when the test ends.
func newFakeTimer(t *testing.T) (*hashedwheel.HashedWheelTimer, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(time.Now())
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake), hashedwheel.WithExecutor(pool.Inline),
		hashedwheel.WithTickDuration(10*time.Millisecond), hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, timer.Start())
	t.Cleanup(func() { timer.Stop() })
	return timer, fake
}

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

// metricName is the name of f's metric in the default namespace.
func metricName(f hashedwheel.StatsField) string {
	name := "hashedwheel_" + f.Name
	if f.Unit == "s" {
		name += "_seconds"
	}
	if f.Counter {
		name += "_total"
	}
	return name
}

// scrape gets url and returns the body.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// samples returns the samples of an exposition but the lateness
// histogram's: metric → timer → value.
func samples(t *testing.T, body string) map[string]map[string]float64 {
	t.Helper()
	line := regexp.MustCompile(`^([a-z0-9_]+)\{timer="([a-z]+)"\} (\S+)$`)
	got := map[string]map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") || strings.HasPrefix(sc.Text(), "hashedwheel_lateness_seconds") {
			continue
		}
		m := line.FindStringSubmatch(sc.Text())
		require.NotNil(t, m, "sample line %q", sc.Text())
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err)
		if got[m[1]] == nil {
			got[m[1]] = map[string]float64{}
		}
		got[m[1]][m[2]] = v
	}
	return got
}

// TestCollectorScrapedOverHTTP: two timers' collectors, registered side
// by side and scraped through promhttp on a real HTTP listener, expose
// every field of Stats, each once with its help text and type, and for
// each timer the value its Stats give, in base units.
func TestCollectorScrapedOverHTTP(t *testing.T) {
	orders, fake := newFakeTimer(t)
	sessions, _ := newFakeTimer(t)
	for range 3 {
		_, err := orders.AfterFunc(5*time.Millisecond, func() {})
		require.NoError(t, err)
	}
	_, err := orders.AfterFunc(5*time.Millisecond, func() { panic("order task exploded") })
	require.NoError(t, err)
	cancelled, err := orders.AfterFunc(time.Hour, func() {})
	require.NoError(t, err)
	cancelled.Cancel()
	for range 2 {
		_, err := sessions.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
	}
	fake.WaitAsleep()
	fake.Advance(20 * time.Millisecond)
	fake.WaitAsleep()

	mux, reg := http.NewServeMux(), prometheus.NewRegistry()
	second, err := wheelprom.NewCollector("sessions", sessions)
	require.NoError(t, err)
	require.NoError(t, reg.Register(second))
	require.NoError(t, serveMetrics(mux, reg, orders))
	require.Error(t, serveMetrics(http.NewServeMux(), reg, orders), "a second collector of the name")
	srv := httptest.NewServer(mux) // listens on 127.0.0.1:0
	defer srv.Close()
	body := scrape(t, srv.URL+"/metrics")
	t.Logf("GET /metrics:\n%s", body)

	stats := map[string]hashedwheel.Stats{"orders": orders.Stats(), "sessions": sessions.Stats()}
	require.Equal(t, uint64(4), stats["orders"].Expired, "orders: %v", stats["orders"])
	require.Equal(t, uint64(1), stats["orders"].TaskPanics, "orders: %v", stats["orders"])
	require.Equal(t, int64(2), stats["sessions"].Pending, "sessions: %v", stats["sessions"])
	got := samples(t, body)
	fields := hashedwheel.StatsFields()
	require.Len(t, got, len(fields), "one metric per field of Stats")
	for _, f := range fields {
		name, typ := metricName(f), "gauge"
		if f.Counter {
			typ = "counter"
		}
		require.Equal(t, 1, strings.Count(body, "# HELP "+name+" "+f.Help+"\n"), "help of %s", name)
		require.Equal(t, 1, strings.Count(body, "# TYPE "+name+" "+typ+"\n"), "type of %s", name)
		for timer, s := range stats {
			require.Equal(t, f.Value(s), got[name][timer], "%s{timer=%q}", name, timer)
		}
	}
	require.Contains(t, body, "hashedwheel_scheduled_total{timer=\"orders\"} 5\n")
	require.Contains(t, body, "hashedwheel_task_panics_total{timer=\"orders\"} 1\n")
	require.Contains(t, body, "hashedwheel_pending{timer=\"sessions\"} 2\n")
}

// TestCollectorReportsEveryFieldInBaseUnits: each field's value reaches
// its own metric, a duration in seconds.
func TestCollectorReportsEveryFieldInBaseUnits(t *testing.T) {
	s := numbered()
	c, err := wheelprom.NewCollector("a", fixed(s), wheelprom.WithNamespace("app_timer"),
		wheelprom.WithConstLabels(prometheus.Labels{"service": "shop"}))
	require.NoError(t, err)
	var want strings.Builder
	for i, f := range hashedwheel.StatsFields() {
		name := strings.Replace(metricName(f), "hashedwheel_", "app_timer_", 1)
		typ, v := "gauge", strconv.Itoa(i+1)
		if f.Counter {
			typ = "counter"
		}
		if f.Unit == "s" {
			v = "1.5"
		}
		want.WriteString("# HELP " + name + " " + f.Help + "\n# TYPE " + name + " " + typ + "\n" +
			name + `{service="shop",timer="a"} ` + v + "\n")
	}
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want.String())))
	require.Equal(t, len(hashedwheel.StatsFields()), testutil.CollectAndCount(c))
}

// TestCollectorPassesTheLinter: names, units and help text follow
// Prometheus's conventions, as promlint checks them.
func TestCollectorPassesTheLinter(t *testing.T) {
	timer, _ := newFakeTimer(t)
	c, err := wheelprom.NewCollector("orders", timer)
	require.NoError(t, err)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// TestCollectorsOfOneNameCollide: a registry refuses a second collector
// of a name it has, and takes one of another name.
func TestCollectorsOfOneNameCollide(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, name := range []string{"a", "b"} {
		c, err := wheelprom.NewCollector(name, fixed{})
		require.NoError(t, err)
		require.NoError(t, reg.Register(c), "collector %s", name)
	}
	again, err := wheelprom.NewCollector("a", fixed{})
	require.NoError(t, err)
	var exists prometheus.AlreadyRegisteredError
	require.ErrorAs(t, reg.Register(again), &exists)
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, len(hashedwheel.StatsFields()))
	for _, mf := range families {
		require.Len(t, mf.GetMetric(), 2, "%s: one series per timer", mf.GetName())
	}
}

// TestNewCollectorRefusesInvalidArguments, naming each.
func TestNewCollectorRefusesInvalidArguments(t *testing.T) {
	var nilTimer *hashedwheel.HashedWheelTimer
	for _, tc := range []struct {
		name  string
		timer wheelprom.Source
		opts  []wheelprom.Option
		want  string
	}{
		{"", fixed{}, nil, `name ""`},
		{"a", nil, nil, "nil timer"},
		{"a", nilTimer, nil, "nil timer"},
		{"a", fixed{}, []wheelprom.Option{wheelprom.WithNamespace("9lives")}, `WithNamespace("9lives")`},
		{"a", fixed{}, []wheelprom.Option{wheelprom.WithConstLabels(prometheus.Labels{"timer": "x"})}, `label "timer"`},
		{"a", fixed{}, []wheelprom.Option{wheelprom.WithConstLabels(prometheus.Labels{"__x": "x"})}, `label "__x"`},
		{"a", fixed{}, []wheelprom.Option{nil}, "nil Option"},
	} {
		_, err := wheelprom.NewCollector(tc.name, tc.timer, tc.opts...)
		require.ErrorIs(t, err, hashedwheel.ErrInvalidOption, "want %s", tc.want)
		require.Contains(t, err.Error(), tc.want)
	}
	c, err := wheelprom.NewCollector("a", fixed{}, wheelprom.WithNamespace(""))
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(
		"# HELP ticks_total Ticks the worker has processed.\n# TYPE ticks_total counter\nticks_total{timer=\"a\"} 0\n"),
		"ticks_total"))
}
