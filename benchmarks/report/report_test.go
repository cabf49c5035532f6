package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

func TestProgressRewritesOneLineOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	l := newLine(&buf, true)
	l.Scenario(1, 7, "churn")
	l.Status("a long first status line")
	l.Status("short")
	out := buf.String()
	if strings.Contains(out, "\n") {
		t.Fatalf("status updates wrote a newline: %q", out)
	}
	parts := strings.Split(out, "\r")
	if len(parts) != 3 || parts[0] != "" {
		t.Fatalf("want two carriage-return-led updates, got %q", out)
	}
	if len(parts[2]) < len(parts[1]) {
		t.Errorf("the shorter update does not blank the longer one's tail: %q then %q", parts[1], parts[2])
	}
	l.Done("done")
	if !strings.HasSuffix(buf.String(), "\n") {
		t.Error("Done does not end the line")
	}
	l.Status(strings.Repeat("x", 300))
	if last := buf.String()[strings.LastIndex(buf.String(), "\r")+1:]; len([]rune(last)) > maxLineWidth {
		t.Errorf("a status line of %d runes: it would wrap and break the rewriting", len([]rune(last)))
	}
}

// Off a terminal, progress is plain lines, one per step: no carriage
// return, and the repeats of one measurement left out.
func TestProgressPrintsPlainLinesElsewhere(t *testing.T) {
	var buf bytes.Buffer
	l := NewLine(&buf) // a buffer is no terminal
	l.Scenario(1, 2, "churn")
	for _, s := range []string{
		"churn: a, filling 10 pending",
		"churn: a, N=10, 1 goroutine(s), run 1/3",
		"churn: a, N=10, 1 goroutine(s), run 2/3",
		"churn: a, N=10, 1 goroutine(s), run 3/3",
		"churn: b, N=10, 1 goroutine(s), run 1/3",
	} {
		l.Status(s)
	}
	l.Scenario(2, 2, "idle")
	l.Status("idle: baseline, no timer, window 1/2")
	l.Status("idle: baseline, no timer, window 2/2")
	l.Done("done")
	out := buf.String()
	if strings.Contains(out, "\r") {
		t.Fatalf("plain progress holds a carriage return: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{"filling 10 pending", "N=10, 1 goroutine(s), run 1/3", "b, N=10, 1 goroutine(s), run 1/3",
		"idle: baseline, no timer, window 1/2", "done"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d, one per step:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d is %q, want it to end in %q", i, lines[i], w)
		}
	}
	if !strings.HasPrefix(lines[3], "[2/2 idle,") {
		t.Errorf("line %q does not name its scenario", lines[3])
	}
}

func TestBusyMachineIsSaid(t *testing.T) {
	quiet := Machine{NumCPU: 2, LoadAvg: "0.20 0.10 0.05"}
	busy := Machine{NumCPU: 2, LoadAvg: "3.10 2.00 1.00"}
	if quiet.Busy() || !busy.Busy() || (Machine{LoadAvg: "unknown"}).Busy() {
		t.Fatal("Busy misjudges the load average")
	}
	r := fakeResults()
	r.Machine.LoadAvg = busy.LoadAvg
	if !strings.Contains(Markdown(r), "shared the machine") {
		t.Error("a busy run's report does not say so")
	}
	r.Machine.LoadAvg = quiet.LoadAvg
	if strings.Contains(Markdown(r), "shared the machine") {
		t.Error("a quiet run's report says it was busy")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{ns(999), "999 ns"}, {ns(1500), "1.50 µs"}, {ns(12_345_678), "12.3 ms"}, {ns(-2_690_000), "−2.69 ms"},
		{ratio(50, 100), "0.50×"}, {ratio(1, 0), "—"}, {count(1_000_000), "1M"}, {count(100_000), "100k"}, {count(0), "0"},
		{nsSpread(scenario.Stat{Median: 162, Min: 155, Max: 171, Runs: 5}), "162 ns (155–171)"},
		{nsSpread(scenario.Stat{Median: 1.32e9, Min: 0.95e9, Max: 1.55e9, Runs: 5}), "1.32 s (0.95–1.55)"}, // the median's unit
		{nsSpread(scenario.Stat{Median: -2e6, Min: -3e6, Max: 1e5, Runs: 5}), "−2.00 ms (−3.00 to 0.10)"},
		{nsSpread(scenario.Stat{Median: 2e4, Min: -1.4e6, Max: 2.94e7, Runs: 5}), "20.0 µs (−1.40 ms to 29.4 ms)"}, // bounds far off
		{nsSpread(scenario.Stat{Median: 5, Min: 5, Max: 5, Runs: 1}), "5.00 ns"}, {nsSpread(scenario.Stat{}), "n/a"},
		{nsSpreadRatio(scenario.Stat{Median: 100, Min: 90, Max: 120, Runs: 5}, scenario.Stat{Median: 200, Runs: 5}), "100 ns (90.0–120) 0.50×"},
		{percentSpread(scenario.Stat{Median: 0.05, Min: -0.01, Max: 0.1, Runs: 5}), "0.050% (-0.010 to 0.100)"},
		{span(time.Hour), "1h"}, {span(10 * time.Minute), "10m"}, {span(30 * time.Second), "30s"}, {span(90 * time.Minute), "90m"}, {span(1500 * time.Millisecond), "1.5s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// st is a figure of 5 runs with median x, the runs within 10% of it.
func st(x float64) scenario.Stat {
	return scenario.Stat{Median: x, Min: x - math.Abs(x)/10, Max: x + math.Abs(x)/10, Runs: 5}
}

// fakeResults is a small, complete set of results for two contenders, the
// second at half the baseline's cost everywhere.
func fakeResults() *Results {
	cs, _ := contender.Select("hashedwheel")
	r := &Results{
		Machine:       Machine{CPUModel: "Test CPU 9000", NumCPU: 2, GOMAXPROCS: 2, GoVersion: "go1.26.8", LoadAvg: "0.10 0.20 0.30", Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)},
		Mode:          "quick",
		Runs:          5,
		ChartFormat:   "svg",
		Contenders:    cs,
		ChurnParams:   scenario.ChurnParams{Pending: []int{0, 1000}, Config: contender.Config{Tick: time.Millisecond, WheelSize: 8}},
		RatioParams:   scenario.RatioParams{Tick: time.Millisecond, Delay: time.Second, Pending: 10, Ratios: []float64{1, 8}},
		StormParams:   scenario.StormParams{N: 10},
		RearmParams:   scenario.RearmParams{Connections: []int{10, 1000}, Delay: 30 * time.Second},
		ScalingParams: scenario.ScalingParams{Procs: []int{1, 2, 4}},
		KeyedSets:     contender.AllKeyed(),
		KeyedParams:   scenario.KeyedParams{Keys: []int{0, 1000}, Delay: 30 * time.Second, LiveDelay: 10 * time.Minute},
	}
	for i, k := range r.KeyedSets {
		f := float64(2 + i) // the baseline 2, then 3 and 4
		for _, n := range r.KeyedParams.Keys {
			for _, g := range []int{1, 2} {
				r.Keyed = append(r.Keyed, scenario.KeyedRow{Contender: k.Name, Keys: n, Goroutines: g,
					NsPerOp: st(100 * f), CPUNsPerOp: st(100 * f), BytesPerKey: 50 * f, Setup: st(1e6 * f)})
			}
		}
	}
	for i, c := range cs {
		f := float64(2 - i) // baseline 2, the other 1
		for _, n := range r.ChurnParams.Pending {
			for _, g := range []int{1, 2} {
				r.Churn = append(r.Churn, scenario.ChurnRow{Contender: c.Name, Pending: n, Goroutines: g, NsPerOp: st(100 * f), CPUNsPerOp: st(120 * f),
					Setup: st(1e6 * f)})
			}
		}
		for _, x := range r.RatioParams.Ratios {
			r.Ratio = append(r.Ratio, scenario.RatioRow{Contender: c.Name, Ratio: x, WheelSize: 8, CPUPerTimeout: st(1000 * f * x), CPUPerTick: st(10 * f)})
		}
		r.Storm = append(r.Storm, scenario.StormRow{Contender: c.Name, ScheduleNsPerOp: st(100 * f), P50: st(1e6 * f), P99: st(2e6 * f),
			Max: st(4e6 * f), Throughput: st(1e6 / f)})
		for _, busy := range []bool{false, true} {
			r.Lateness = append(r.Lateness, scenario.LatenessRow{Contender: c.Name, Busy: busy, P50: st(1e6), P99: st(1e6 * f),
				P999: st(2e6 * f), Min: st(-1e6 * float64(i)), Max: st(3e6), Samples: []int64{-1e6, 0, 1e6, 2e6}})
		}
		r.Memory = append(r.Memory, scenario.MemoryRow{Contender: c.Name, BytesPerPending: 64 * f, GCCPUFull: st(1e6 * f),
			GCWallFull: st(1e6), GCCPU: st(1e5 * f)})
		r.Idle = append(r.Idle, scenario.IdleRow{Contender: c.Name, Tick: time.Millisecond, Percent: st(1), PerTick: st(1e4)},
			scenario.IdleRow{Contender: c.Name, Tick: time.Millisecond, Pending: 10_000, Delay: 10 * time.Minute, Percent: st(2), PerTick: st(2e4)})
		for _, n := range r.RearmParams.Connections {
			for _, g := range []int{1, 2} {
				r.Rearm = append(r.Rearm, scenario.RearmRow{Contender: c.Name, Connections: n, Goroutines: g,
					NsPerOp: st(50 * f), CPUNsPerOp: st(60 * f), Rescheduled: 0.25 * float64(i), Setup: st(1e6 * f)})
			}
		}
		for _, procs := range r.ScalingParams.Procs {
			r.Scaling = append(r.Scaling, scenario.ScalingRow{Contender: c.Name, Procs: procs, NsPerOp: st(100 * f / float64(procs)), CPUNsPerOp: st(100 * f)})
		}
	}
	return r
}

func TestMarkdownNamesTheMachineAndComparesWithTheBaseline(t *testing.T) {
	md := Markdown(fakeResults())
	for _, want := range []string{
		"Test CPU 9000", "go1.26.8", "| 2 | 2 |", "0.10 0.20 0.30", "2026-01-02",
		"belong to this machine",
		// Once near the top: the runs, the command and the harness.
		"Every timing is the median of 5 runs", "over 5 storms per contender", "`make bench-quick`", "`benchmarks/cmd/report`",
		"package `benchmarks/scenario`",
		// The headline: each timing with its range and ratio.
		"| `hashedwheel` | 100 ns (90.0–110) 0.50× | 100 ns (90.0–110) 0.50× | 120 ns (108–132) 0.50× | 4.00 ms (3.60–4.40) 0.50× | 1.00 ms (0.90–1.10) 0.50× | 64 B 0.50× |",
		// A storm row: p50, p99 and max over the storms, the worst at the top.
		"| `hashedwheel` | 100 ns (90.0–110) 0.50× | 1.00 ms (0.90–1.10) 0.50× | 2.00 ms (1.80–2.20) 0.50× | 4.00 ms (3.60–4.40) 0.50× | 1.00M/s (0.90–1.10) |",
		"| 1k | `hashedwheel` | 100 ns (90.0–110) 0.50× |", "1.00 ms (0.90–1.10) 0.50× |\n", // a pending row and its setup
		"| `hashedwheel` | idle | 1.00 ms (0.90–1.10) 1.00× |", "| −1.00 ms (−1.10 to −0.90) |", // lateness, its signed minimum
		"| `hashedwheel` | 1.00 ms | 10k, 10m away | 2.000% (1.800–2.200) | 40.0 ms (36.0–44.0) | 20.0 µs (18.0–22.0) |",
		"## 1.", "## 2.", "## 3.", "## 4.", "## 5.", "## 6.", "## 7.", "## 8.", "## 9.", "## 10. Keyed timers",
		"bench-pending.svg", "bench-crossover.svg", "bench-lateness.svg", "bench-rearm.svg", "bench-scaling.svg",
		"What could not be measured cleanly",
		"| 1k | `hashedwheel` | 2 | 50.0 ns (45.0–55.0) 0.50×", "| 25% |", // a re-arm row and its rescheduled share
		"These figures come from one machine: Test CPU 9000, 2 CPUs", "| GOMAXPROCS 1 | GOMAXPROCS 2 | GOMAXPROCS 4 |",
		"| `hashedwheel` | 100 ns (90.0–110) 0.50× | 50.0 ns (45.0–55.0) 0.50× | 25.0 ns (22.5–27.5) 0.50× |",
		"| 1k | `keyed` | 2 | 300 ns (270–330) 1.50× | 300 ns (270–330) 1.50× | 0 | 0.00 | 150 B 1.50× | 3.00 ms (2.70–3.30) 1.50× |", // a keyed row, its heap per key and setup
		"| 0 | `go-zero` | 1 | 400 ns (360–440) 2.00× | 400 ns (360–440) 2.00× | 0 | 0.00 | — | — |",
		"| `map+AfterFunc` | by hand:",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestWriteChartsWritesEveryChart(t *testing.T) {
	all := []string{ChartPending, ChartCrossover, ChartLateness, ChartRearm, ChartScaling}
	for _, empty := range []bool{false, true} {
		r := fakeResults()
		if empty { // scenarios that measured nothing still draw, empty
			r.Churn, r.Ratio, r.Lateness, r.Rearm, r.Scaling = nil, nil, nil, nil, nil
		}
		dir := t.TempDir()
		n, err := WriteCharts(r, dir)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(all) {
			t.Errorf("WriteCharts reports %d charts, want %d", n, len(all))
		}
		for _, name := range all {
			b, err := os.ReadFile(filepath.Join(dir, name+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte("<svg")) {
				t.Errorf("%s is not an SVG", name)
			}
		}
	}
}

// A run narrowed to the scaling scenario, as on a many-core machine, makes
// a report of that scenario alone: its section, its chart and the machine,
// and nothing of the scenarios it did not run, so that it overwrites no
// other chart in the directory.
func TestNarrowedRunHoldsOnlyItsScenarios(t *testing.T) {
	r := fakeResults()
	r.Scenarios = []string{"scaling"}
	md := Markdown(r)
	for _, want := range []string{"## 9. Scaling", "These figures come from one machine: Test CPU 9000", "-scenarios scaling", "bench-scaling.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("narrowed report lacks %q", want)
		}
	}
	for _, unwanted := range []string{"## Headline", "## 1.", "## 3.", "## 7.", "## 8.", "## 10.", "bench-pending"} {
		if strings.Contains(md, unwanted) {
			t.Errorf("narrowed report holds %q", unwanted)
		}
	}
	dir := t.TempDir()
	if n, err := WriteCharts(r, dir); err != nil || n != 1 {
		t.Fatalf("WriteCharts = %d, %v; want the scaling chart alone", n, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != ChartScaling+".svg" {
		t.Fatalf("narrowed run wrote %v, want %s.svg alone", entries, ChartScaling)
	}
}
