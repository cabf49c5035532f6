package main

import (
	"slices"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

// The quick matrix must stay a reduction of the full one: every scenario,
// smaller or shorter, so that make bench-quick keeps within its minute.
func TestQuickPlanIsAReductionOfTheFullOne(t *testing.T) {
	q, f := quickPlan(), fullPlan(false)
	switch {
	case len(q.churn.Pending) >= len(f.churn.Pending), q.churn.Runs > f.churn.Runs, q.churn.Window >= f.churn.Window:
		t.Error("quick churn is not smaller")
	case q.ratio.Pending >= f.ratio.Pending || !slices.Equal(q.ratio.Ratios, f.ratio.Ratios):
		t.Error("quick crossover must sweep the same ratios with fewer timeouts")
	case q.storm.N >= f.storm.N, q.lateness.PerRun >= f.lateness.PerRun, q.memory.Pending >= f.memory.Pending:
		t.Error("quick storm, lateness or memory is not smaller")
	case len(q.idle.Cases) > len(f.idle.Cases), q.idle.Window >= f.idle.Window:
		t.Error("quick idle is not smaller")
	case slices.Max(q.rearm.Connections) >= slices.Max(f.rearm.Connections), q.rearm.Window >= f.rearm.Window:
		t.Error("quick re-arm is not smaller")
	case q.scaling.Window >= f.scaling.Window:
		t.Error("quick scaling is not shorter")
	case slices.Max(q.keyed.Keys) >= slices.Max(f.keyed.Keys), q.keyed.Window >= f.keyed.Window:
		t.Error("quick keyed is not smaller")
	}
	if !slices.Equal(f.keyed.Keys, []int{0, 1_000_000}) || f.keyed.LiveDelay <= f.keyed.Delay {
		t.Errorf("full keyed measures %v live keys due in %v, want 0 and 1M, due after the measured keys", f.keyed.Keys, f.keyed.LiveDelay)
	}
	if !slices.Equal(f.rearm.Connections, []int{10_000, 1_000_000}) || f.rearm.Delay != 30*time.Second {
		t.Errorf("full re-arm measures %v connections at %v, want 10k and 1M at 30s", f.rearm.Connections, f.rearm.Delay)
	}
	for _, p := range []plan{q, f} {
		if !slices.Equal(p.scaling.Procs, []int{1, 2, 4, 8, 16}) {
			t.Errorf("scaling at GOMAXPROCS %v, want 1, 2, 4, 8, 16", p.scaling.Procs)
		}
		far := scenario.IdleCase{Tick: time.Millisecond, Pending: 1, Delay: time.Hour}
		many := scenario.IdleCase{Tick: time.Millisecond, Pending: 10_000, Delay: 10 * time.Minute, Spread: farSpread}
		if !slices.Contains(p.idle.Cases, far) || !slices.Contains(p.idle.Cases, many) || !slices.Contains(p.idle.Cases, scenario.IdleCase{Tick: p.idle.Cases[0].Tick}) {
			t.Errorf("idle cases %v lack nothing pending, one timeout 1h away at 1ms, or 10 000 10m away at 1ms", p.idle.Cases)
		}
		seen := map[scenario.IdleCase]bool{}
		for _, c := range p.idle.Cases {
			if seen[c] {
				t.Errorf("idle case %+v measured twice", c)
			}
			seen[c] = true
		}
	}
	// Every figure of the report is the median of the runs it states,
	// at least 5 in the full matrix: each scenario repeats each
	// measurement as often.
	for _, p := range []plan{q, f, fullPlan(true)} {
		if got := []int{p.churn.Runs, p.ratio.Runs, p.storm.Runs, p.lateness.Runs, p.memory.Churns, p.memory.Collections,
			p.idle.Runs, p.rearm.Runs, p.scaling.Runs, p.keyed.Runs}; slices.Min(got) != p.runs || slices.Max(got) != p.runs {
			t.Errorf("runs per scenario %v, want each %d, the count the report states", got, p.runs)
		}
	}
	if f.runs < 5 {
		t.Errorf("the full matrix takes medians of %d runs, fewer than 5", f.runs)
	}
	if long := fullPlan(true); !slices.Contains(long.churn.Pending, 10_000_000) || slices.Contains(f.churn.Pending, 10_000_000) {
		t.Error("10M pending belongs to -long only")
	}
	for _, r := range f.ratio.Ratios {
		if w := f.ratio.WheelSize(r); w&(w-1) != 0 {
			t.Errorf("ratio %g gives W=%d, not a power of two: hashedwheel would round it", r, w)
		}
	}
}

func TestSelectScenarios(t *testing.T) {
	all, err := selectScenarios("")
	if err != nil || len(all) != len(scenarioNames) {
		t.Fatalf("selectScenarios(\"\") = %v, %v; want every scenario", all, err)
	}
	only, err := selectScenarios(" scaling ")
	if err != nil || len(only) != 1 || !only["scaling"] {
		t.Fatalf("selectScenarios(scaling) = %v, %v", only, err)
	}
	if _, err := selectScenarios("scaling,nope"); err == nil {
		t.Fatal("selectScenarios accepted an unknown scenario")
	}
}
