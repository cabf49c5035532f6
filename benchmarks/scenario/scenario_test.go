package scenario

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// These tests run every scenario at a toy size on every contender: they
// check that the harness measures what it claims (each row present, figures
// finite and positive, nothing lost) and hold the never-early contenders to
// a non-negative lateness. Speed is the benchmarks' business, not theirs.

var small = contender.Config{Tick: time.Millisecond, WheelSize: 16}

func byName() map[string]contender.Contender {
	m := map[string]contender.Contender{}
	for _, c := range contender.All() {
		m[c.Name] = c
	}
	return m
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// spans reports whether s is over runs runs, its median within its range.
func spans(s Stat, runs int) bool { return s.Runs == runs && s.Min <= s.Median && s.Median <= s.Max }

func TestChurnMeasuresEveryContender(t *testing.T) {
	cs := contender.All()
	rows, notes := Churn(ChurnParams{Config: small, Pending: []int{0, 1000}, Delay: 5 * time.Millisecond,
		PendingDelay: time.Hour, PendingSpread: time.Second, Window: 5 * time.Millisecond, Runs: 2}, cs, nil)
	modes := 2 // one goroutine and GOMAXPROCS, unless that is one too
	if runtime.GOMAXPROCS(0) == 1 {
		modes = 1
	}
	if want := 2 * modes * len(cs); len(rows) != want {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), want, notes)
	}
	for _, r := range rows {
		if !positive(r.NsPerOp.Median) || !spans(r.NsPerOp, 2) || r.BytesPerOp < 0 || r.Errors != 0 {
			t.Errorf("%s N=%d g=%d: ns/op %+v B/op %v errors %d", r.Contender, r.Pending, r.Goroutines, r.NsPerOp, r.BytesPerOp, r.Errors)
		}
		// The pending timeouts are scheduled afresh for each run; there
		// is nothing to time with none.
		if setupRuns := map[int]int{0: 0, 1000: 2}[r.Pending]; r.Setup.Runs != setupRuns || setupRuns > 0 && !positive(r.Setup.Median) {
			t.Errorf("%s N=%d: setup %+v, want over %d fills", r.Contender, r.Pending, r.Setup, setupRuns)
		}
	}
}

func TestRatioKeepsUp(t *testing.T) {
	cs := contender.All()
	p := RatioParams{Tick: time.Millisecond, Delay: 64 * time.Millisecond, Pending: 200, Ratios: []float64{0.5, 32},
		Warmup: 5 * time.Millisecond, Window: 20 * time.Millisecond, Runs: 1}
	rows, notes := Ratio(p, cs, nil)
	if len(rows) != 2*len(cs) {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), 2*len(cs), notes)
	}
	for _, r := range rows {
		if !positive(r.CPUPerTimeout.Median) || r.WheelSize != map[float64]int{0.5: 128, 32: 2}[r.Ratio] {
			t.Errorf("%s at %g: CPU/timeout %v, wheel size %d", r.Contender, r.Ratio, r.CPUPerTimeout, r.WheelSize)
		}
	}
}

func TestStormRunsEveryTask(t *testing.T) {
	cs := contender.All()
	names := byName()
	rows, notes := Storm(StormParams{Config: small, N: 2000, Spread: 10 * time.Millisecond, Runs: 2, Patience: 20 * time.Second}, cs, nil)
	if len(rows) != len(cs) {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), len(cs), notes)
	}
	for _, r := range rows {
		if r.TimedOut != 0 || !positive(r.ScheduleNsPerOp.Median) || r.PeakGoroutines < 1 || !positive(r.Throughput.Median) {
			t.Errorf("%s: %+v", r.Contender, r)
		}
		// Both storms count, each with its own quantiles, the worst storm's
		// at the top of each range.
		if !spans(r.P50, 2) || !spans(r.P99, 2) || !spans(r.Max, 2) || r.P50.Max > r.P99.Max || r.P99.Max > r.Max.Max {
			t.Errorf("%s: lateness p50 %+v p99 %+v max %+v", r.Contender, r.P50, r.P99, r.Max)
		}
		if names[r.Contender].NeverEarly && r.Early != 0 {
			t.Errorf("%s: %d tasks ran before their deadline", r.Contender, r.Early)
		}
	}
}

func TestLatenessNeverNegativeForNeverEarlyTimers(t *testing.T) {
	cs := contender.All()
	names := byName()
	rows, notes := Lateness(LatenessParams{Config: small, PerRun: 200, Bursts: 4, BurstEvery: 2 * time.Millisecond,
		MinDelay: 2 * time.Millisecond, MaxDelay: 10 * time.Millisecond, Runs: 2, Patience: 20 * time.Second}, cs, nil)
	if len(rows) != 2*len(cs) {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), 2*len(cs), notes)
	}
	for _, r := range rows {
		if r.Lost != 0 || len(r.Samples) != 400 || r.P50.Median > r.P99.Median || r.P99.Median > r.P999.Median ||
			r.Min.Median > r.P50.Median || r.P999.Median > r.Max.Median || !spans(r.Min, 2) || !spans(r.Max, 2) {
			t.Errorf("%s busy=%v: lost %d, %d samples, min %+v p50 %+v p99 %+v p999 %+v max %+v",
				r.Contender, r.Busy, r.Lost, len(r.Samples), r.Min, r.P50, r.P99, r.P999, r.Max)
		}
		if names[r.Contender].NeverEarly && r.Min.Min < 0 {
			t.Errorf("%s busy=%v: a task ran %v early", r.Contender, r.Busy, time.Duration(-r.Min.Min))
		}
	}
}

func TestMemoryMeasuresEveryContender(t *testing.T) {
	cs := contender.All()
	rows, notes := Memory(MemoryParams{Config: small, Pending: 2000, PendingDelay: time.Hour, PendingSpread: time.Second,
		Settle: 5 * time.Millisecond, ChurnRate: 10_000, ChurnFor: 20 * time.Millisecond, Churns: 2, Collections: 2}, cs, nil)
	if len(rows) != len(cs) {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), len(cs), notes)
	}
	for _, r := range rows {
		// Every contender keeps at least a pointer per pending timeout.
		if r.BytesPerPending < 8 || !positive(r.AchievedRate) || r.Pairs <= 0 || !positive(r.GCWallFull.Median) ||
			!spans(r.GCWallFull, 2) || !spans(r.GCCPU, 2) {
			t.Errorf("%s: %+v", r.Contender, r)
		}
	}
}

func TestIdleMeasuresEveryContender(t *testing.T) {
	cs := contender.All()
	cases := []IdleCase{
		{Tick: 10 * time.Millisecond},
		{Tick: 10 * time.Millisecond, Pending: 1, Delay: time.Hour},
		{Tick: time.Millisecond, Pending: 1, Delay: time.Hour},
		{Tick: time.Millisecond, Pending: 100, Delay: 10 * time.Minute, Spread: time.Second},
	}
	rows, _, notes := Idle(IdleParams{Cases: cases, WheelSize: 16, Window: 20 * time.Millisecond, Runs: 2}, cs, nil)
	want := 0
	for _, c := range cs {
		want += len(casesFor(c, cases))
	}
	// Four cases for a ticked contender; three for the others, for which
	// the two cases of one timeout an hour away are the same.
	if len(casesFor(contender.All()[0], cases)) != 3 || len(rows) != want {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), want, notes)
	}
	for _, r := range rows {
		if r.Pending == 100 && r.Delay != 10*time.Minute {
			t.Errorf("%s: row of the 100-pending case says %v away", r.Contender, r.Delay)
		}
		if !spans(r.Percent, 2) || r.Tick > 0 && !spans(r.PerTick, 2) {
			t.Errorf("%s: CPU %+v, per tick %+v, want each over the 2 windows", r.Contender, r.Percent, r.PerTick)
		}
	}
}

func TestRearmMeasuresEveryContender(t *testing.T) {
	cs := contender.All()
	rows, notes := Rearm(RearmParams{Config: small, Connections: []int{1, 1000}, Delay: time.Hour, Spread: time.Second,
		Window: 5 * time.Millisecond, Runs: 1}, cs, nil)
	modes := 2
	if runtime.GOMAXPROCS(0) == 1 {
		modes = 1
	}
	if want := 2 * modes * len(cs); len(rows) != want {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), want, notes)
	}
	for _, r := range rows {
		if !positive(r.NsPerOp.Median) || r.BytesPerOp < 0 || r.Errors != 0 || r.Rescheduled < 0 || r.Rescheduled > 1 {
			t.Errorf("%s N=%d g=%d: %+v", r.Contender, r.Connections, r.Goroutines, r)
		}
		// Nothing fires during the run, so every contender that can move a
		// timeout does; only a Reset that refuses reschedules.
		if r.Contender == contender.Baseline && r.Rescheduled != 0 {
			t.Errorf("time.Timer.Reset rescheduled %.0f%% of the re-arms", 100*r.Rescheduled)
		}
	}
}

// Every connection is re-armed: the scattered order covers each share.
func TestScatterStepVisitsEveryIndex(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 64, 1000, 1 << 16} {
		step := scatterStep(n)
		seen := make([]bool, n)
		j := 0
		for range n {
			seen[j] = true
			if j += step; j >= n {
				j -= n
			}
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("n=%d step=%d: index %d never visited", n, step, i)
			}
		}
	}
}

func TestScalingSetsGOMAXPROCSAndRestoresIt(t *testing.T) {
	cs, _ := contender.Select("minheap")
	before := runtime.GOMAXPROCS(0)
	rows, notes := Scaling(ScalingParams{Config: small, Procs: []int{1, 3}, Delay: 5 * time.Millisecond,
		Window: 5 * time.Millisecond, Runs: 1}, cs, nil)
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Fatalf("GOMAXPROCS %d after the scenario, %d before", after, before)
	}
	if len(rows) != 2*len(cs) {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), 2*len(cs), notes)
	}
	for i, r := range rows {
		if want := []int{1, 3}[i/len(cs)]; r.Procs != want || !positive(r.NsPerOp.Median) || r.Errors != 0 {
			t.Errorf("row %d: %+v, want GOMAXPROCS %d", i, r, want)
		}
	}
}

func TestQuantileIsNearestRank(t *testing.T) {
	s := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want int64
	}{{0, 1}, {0.5, 5}, {0.99, 10}, {1, 10}, {0.1, 1}, {0.11, 2}} {
		if got := quantile(s, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %d, want %d", tc.q, got, tc.want)
		}
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median = %v, want 2.5", m)
	}
	if s := statOf([]float64{3, 1, 2, 10}); s != (Stat{Median: 2.5, Min: 1, Max: 10, Runs: 4}) {
		t.Errorf("statOf = %+v, want median 2.5 from 1 to 10 over 4", s)
	}
	if s := statOf(nil); s.Runs != 0 || !math.IsNaN(s.Median) {
		t.Errorf("statOf(nil) = %+v, want no run and a NaN median", s)
	}
	if s := (Stat{Median: 2, Min: 1, Max: 4, Runs: 3}).Less(1).Scale(10); s != (Stat{Median: 10, Min: 0, Max: 30, Runs: 3}) {
		t.Errorf("Less then Scale = %+v", s)
	}
}

func TestKeyedMeasuresEveryKeyedSet(t *testing.T) {
	ks := contender.AllKeyed()
	rows, notes := Keyed(KeyedParams{Config: small, Keys: []int{0, 1000}, LiveDelay: time.Hour, LiveSpread: time.Second,
		Delay: time.Minute, Window: 5 * time.Millisecond, Runs: 2}, ks, nil)
	modes := 2
	if runtime.GOMAXPROCS(0) == 1 {
		modes = 1
	}
	if want := 2 * modes * len(ks); len(rows) != want {
		t.Fatalf("%d rows, want %d; notes %v", len(rows), want, notes)
	}
	for _, r := range rows {
		if !positive(r.NsPerOp.Median) || !spans(r.CPUNsPerOp, 2) || r.BytesPerOp < 0 || r.Errors != 0 {
			t.Errorf("%s N=%d g=%d: %+v", r.Contender, r.Keys, r.Goroutines, r)
		}
		if setupRuns := map[int]int{0: 0, 1000: 2}[r.Keys]; r.Setup.Runs != setupRuns {
			t.Errorf("%s N=%d: setup %+v, want over %d fills", r.Contender, r.Keys, r.Setup, setupRuns)
		}
		if (r.Keys > 0) != (r.BytesPerKey > 0) {
			t.Errorf("%s N=%d: %.0f bytes per live key", r.Contender, r.Keys, r.BytesPerKey)
		}
	}
}

// The operation leaves nothing behind: each key it sets is gone after it.
func TestSetMoveRemoveLeavesNoKey(t *testing.T) {
	for _, k := range contender.AllKeyed() {
		expired := make(chan uint64, 1)
		set, err := k.New(small, func(key uint64, _ *contender.Item) { expired <- key })
		if err != nil {
			t.Fatal(err)
		}
		for key := range uint64(100) {
			if err := SetMoveRemove(set, key, 20*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case key := <-expired:
			t.Errorf("%s: key %d expired after Set, Move and Remove", k.Name, key)
		case <-time.After(100 * time.Millisecond):
		}
		set.Close()
	}
}
