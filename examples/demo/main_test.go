package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// smallConfig is a workload that finishes in well under a second.
func smallConfig() config {
	cfg := defaultConfig()
	cfg.N = 20_000
	cfg.MinDelay = 100 * time.Millisecond
	cfg.MaxDelay = 300 * time.Millisecond
	cfg.Tick = 5 * time.Millisecond
	cfg.Progress = 50 * time.Millisecond
	cfg.Rounds = 3
	cfg.CostOps = 2000
	return cfg
}

func TestRunPrintsSummary(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), smallConfig(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"Machine: ", fmt.Sprintf("GOMAXPROCS %d", runtime.GOMAXPROCS(0)), runtime.Version(),
		"3 rounds of 2,000 operations each (500 of a context)",
		"Scheduling 20,000 timeouts", "One run on each timer",
		"hashedwheel", "time.AfterFunc",
		"memory per pending timeout",
		"firing lateness p50", "firing lateness p99", "firing lateness max",
		"hashedwheel.Stats: scheduled 20,000",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Each cost row has both sides' spreads, then the ratio's or void.
	for _, row := range []string{"schedule + cancel", "the same on ", "request context + cancel"} {
		line := lineWith(got, row)
		if n := strings.Count(line, "("); !(n == 3 || n == 2 && strings.HasSuffix(line, " void")) {
			t.Errorf("cost row %q = %q: want both sides and a ratio or void", row, line)
		}
	}
	// The bulk phases are not timed: no single-shot rate is compared.
	for _, gone := range []string{"schedule rate", "cancel rate", "faster", "slower"} {
		if strings.Contains(got, gone) {
			t.Errorf("output still prints %q", gone)
		}
	}
	early := lineWith(got, "fired early")
	if strings.Count(early, "none") != 2 {
		t.Errorf("fired early line = %q, want none for both timers", early)
	}
	// Not a terminal: progress lines end in newlines, never in \r, and fit
	// an 80-column terminal.
	if strings.Contains(got, "\r") {
		t.Error("output to a non-terminal contains \\r")
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "wheel ") || strings.HasPrefix(l, "AfterFunc ") {
			if n := len([]rune(l)); n >= 80 {
				t.Errorf("progress line of %d columns: %q", n, l)
			}
		}
	}
	if t.Failed() {
		t.Log(got)
	}
}

func TestRunTerminalRewritesOneLine(t *testing.T) {
	cfg := smallConfig()
	cfg.Compare = false
	cfg.Rounds = 0
	cfg.TTY = true
	cfg.Progress = 10 * time.Millisecond
	var out bytes.Buffer
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	progress := lineWith(got, "\rwheel")
	if strings.Count(progress, "\r") < 2 {
		t.Fatalf("want one line rewritten with \\r several times, got %q", progress)
	}
	if strings.Contains(got, "time.AfterFunc") {
		t.Error("-compare=false still ran time.AfterFunc")
	}
	if strings.Contains(got, "Cost per operation") {
		t.Error("-rounds 0 still measured the cost")
	}
}

func TestRunBackendAccountsForEveryTimeout(t *testing.T) {
	cfg := smallConfig() // 20 000 timeouts: what the goroutines of earlier tests still allocate is a few bytes each
	cfg.CancelFrac = 0.5
	// Nothing fires before the heap is measured, even on a loaded machine
	// where scheduling 20 000 takes long: what a firing allocates (the
	// dispatch's lists, the lateness buffers) is not the timeouts' memory.
	cfg.MinDelay, cfg.MaxDelay = time.Second, 1200*time.Millisecond
	w := newWorkload(cfg)
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick), hashedwheel.WithTicksPerWheel(cfg.Wheel))
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Stop()
	var out bytes.Buffer
	r, err := runBackend(context.Background(), cfg, w, &out, backend[hashedwheel.Timeout]{
		name: "hashedwheel", label: "wheel", resolution: cfg.Tick, schedule: timer.AfterFunc, cancel: hashedwheel.Timeout.Cancel,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.fired+r.cancelled != int64(cfg.N) {
		t.Errorf("fired %d + cancelled %d != %d", r.fired, r.cancelled, cfg.N)
	}
	if r.cancelled > int64(w.toStop) || r.fired < int64(cfg.N-w.toStop) {
		t.Errorf("cancelled %d of %d chosen; fired %d", r.cancelled, w.toStop, r.fired)
	}
	if r.early != 0 {
		t.Errorf("%d timeouts fired early", r.early)
	}
	if !(0 <= r.p50 && r.p50 <= r.p99 && r.p99 <= r.max) {
		t.Errorf("lateness p50 %v, p99 %v, max %v: not ordered", r.p50, r.p99, r.max)
	}
	// The funcs are allocated before the heap is measured: what is left is
	// the timer's own memory, 64 bytes a timeout, with some slack for the
	// wheel's buckets and the runtime's bookkeeping.
	if r.bytesPerPending < 48 || r.bytesPerPending > 96 {
		t.Errorf("memory per pending timeout = %.1f B, want about 64", r.bytesPerPending)
	}
	s := timer.Stats()
	if s.Scheduled != uint64(cfg.N) || s.Expired != uint64(r.fired) {
		t.Errorf("timer Stats %+v; run counted %d fired", s, r.fired)
	}
}

// A timer that runs every task at once, long before its deadline, has
// each of them counted early: the count comes from the recorded lateness,
// which the tasks write without sharing.
func TestRunBackendCountsEarlyTimeouts(t *testing.T) {
	cfg := smallConfig()
	cfg.N = 1000
	cfg.CancelFrac = 0
	var wg sync.WaitGroup
	r, err := runBackend(context.Background(), cfg, newWorkload(cfg), io.Discard, backend[int]{
		name: "at once", label: "now", resolution: cfg.Tick,
		schedule: func(_ time.Duration, f func()) (int, error) { wg.Go(f); return 0, nil },
		cancel:   func(int) bool { return false },
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if r.fired != int64(cfg.N) || r.early != int64(cfg.N) || r.max >= 0 {
		t.Errorf("fired %d, early %d, max lateness %v; want all %d early", r.fired, r.early, r.max, cfg.N)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	cfg := smallConfig()
	cfg.N = 1000
	cfg.MinDelay, cfg.MaxDelay = time.Hour, 2*time.Hour
	cfg.CancelFrac = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if err := run(ctx, cfg, &out); !errors.Is(err, context.Canceled) {
		t.Fatalf("run with a cancelled context: err = %v, want context.Canceled", err)
	}
}

func TestValidate(t *testing.T) {
	for _, mod := range []func(*config){
		func(c *config) { c.N = 0 },
		func(c *config) { c.CancelFrac = 1.5 },
		func(c *config) { c.MinDelay, c.MaxDelay = 2*time.Second, time.Second },
		func(c *config) { c.Producers = 0 },
		func(c *config) { c.Rounds = -1 },
		func(c *config) { c.CostOps = 0 },
	} {
		cfg := defaultConfig()
		mod(&cfg)
		if err := run(context.Background(), cfg, &bytes.Buffer{}); err == nil {
			t.Errorf("run accepted %+v", cfg)
		}
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1.00k", 98_312: "98.3k", 1_000_000: "1.00M"} {
		if got := si(n); got != want {
			t.Errorf("si(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1_000_000: "1,000,000", -12345: "-12,345"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{1500 * time.Microsecond: "1.50ms", 11 * time.Millisecond: "11.0ms", 517 * time.Microsecond: "517µs"} {
		if got := fmtDur(d); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRunVoidWhenTasksRanFarLate(t *testing.T) {
	wheel := result{name: "hashedwheel", resolution: 10 * time.Millisecond, fired: 100, cancelled: 900, toCancel: 900, p50: 6 * time.Millisecond, bytesPerPending: 64}
	baseline := result{name: "time.AfterFunc", fired: 100, cancelled: 900, toCancel: 900, p50: 39 * time.Second, bytesPerPending: 129}
	assert.Empty(t, wheel.void())
	assert.Contains(t, baseline.void(), "time.AfterFunc's tasks ran a median of 39.0s late")

	var out bytes.Buffer
	printSummary(&out, smallConfig(), []result{wheel, baseline})
	got := out.String()
	assert.Contains(t, got, "void: time.AfterFunc's tasks")
	assert.NotRegexp(t, `\d\.\d\dx`, lineWith(got, "memory per pending timeout"), "a void run is compared")

	out.Reset()
	baseline.p50 = 500 * time.Microsecond
	printSummary(&out, smallConfig(), []result{wheel, baseline})
	assert.Contains(t, lineWith(out.String(), "memory per pending timeout"), "0.50x")
	assert.NotContains(t, out.String(), "void")
}

// TestRunVoidWhenCancellationsCameTooLate: a timer that fired more than 1%
// of the timeouts it was to cancel ran another workload.
func TestRunVoidWhenCancellationsCameTooLate(t *testing.T) {
	r := result{name: "time.AfterFunc", fired: 1000, cancelled: 0, toCancel: 900, p50: time.Millisecond}
	assert.Contains(t, r.void(), "time.AfterFunc: 900 of the 900 timeouts to cancel fired first")
	r.fired, r.cancelled = 109, 891 // 1%: still the same workload
	assert.Empty(t, r.void())
	r.fired, r.cancelled = 110, 890
	assert.Contains(t, r.void(), "10 of the 900 timeouts to cancel fired first")
}

// lineWith returns the first line of s containing sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestRunPrintsOnlyWholeRunFigures: the progress lines give counts, no
// rate and no lateness of the moment (the first second's rate was the
// workload's own burst, the same on both timers); the figures printed are
// the summary's, measured over each whole run.
func TestRunPrintsOnlyWholeRunFigures(t *testing.T) {
	cfg := smallConfig()
	cfg.Rounds = 0
	var out bytes.Buffer
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	progress := regexp.MustCompile(`^(wheel|AfterFunc) +pending +\S+ fired +\S+ cancelled +\S+$`)
	lines := 0
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "wheel ") || strings.HasPrefix(l, "AfterFunc ") {
			lines++
			assert.Regexp(t, progress, l, "a progress line with more than counts")
		}
	}
	assert.GreaterOrEqual(t, lines, 2, "a progress line for each timer at least")
	assert.NotContains(t, got, "/s", "a rate")
	assert.NotContains(t, got, "rate")
	if t.Failed() {
		t.Log(got)
	}
}
