package main

import (
	"slices"
	"testing"
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
	case len(q.idle.Ticks) > len(f.idle.Ticks), q.idle.Window >= f.idle.Window:
		t.Error("quick idle is not smaller")
	}
	if f.churn.Runs < 5 || f.ratio.Runs < 5 || f.storm.Runs < 5 || f.lateness.Runs < 5 || f.idle.Runs < 5 {
		t.Error("the full matrix takes medians of fewer than 5 runs")
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
