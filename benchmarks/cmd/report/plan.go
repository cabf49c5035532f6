package main

import (
	"slices"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

// plan is the matrix of one run: the parameters of every scenario.
type plan struct {
	// runs is how many times every scenario repeats each measurement:
	// runs, windows, storms, fills and collections alike.
	runs     int
	churn    scenario.ChurnParams
	ratio    scenario.RatioParams
	storm    scenario.StormParams
	lateness scenario.LatenessParams
	memory   scenario.MemoryParams
	idle     scenario.IdleParams
	rearm    scenario.RearmParams
	scaling  scenario.ScalingParams
	keyed    scenario.KeyedParams
}

// The wheel shapes. General scenarios use a 10ms × 512 wheel (5.12s span,
// Netty's wheel size); the ones about resolution and the span use a 1ms
// tick, the finest the runtime's timers can honour.
var (
	general    = contender.Config{Tick: 10 * time.Millisecond, WheelSize: 512}
	fine       = contender.Config{Tick: time.Millisecond, WheelSize: 1024}
	patience   = 60 * time.Second
	farDelay   = 10 * time.Minute
	farSpread  = 10 * time.Second
	churnDelay = time.Second
	// The crossover holds D at 2.048s, so that W = D/(ratio·tick) is a
	// power of two for every ratio (4096, 256, 32, 2) and hashedwheel does
	// not round it.
	ratioDelay = 2048 * time.Millisecond
	ratios     = []float64{0.5, 8, 64, 1024}
	// idleDelay is how far the idle connections' deadline is pushed back
	// on every message.
	idleDelay = 30 * time.Second
	// scalingProcs are the GOMAXPROCS values of the scaling scenario.
	scalingProcs = []int{1, 2, 4, 8, 16}
)

// idleCases are the idle states measured at each of ticks: nothing pending
// and one timeout an hour away; and, at a 1ms tick whatever ticks holds,
// one timeout an hour away and 10 000 pending ten minutes away.
func idleCases(ticks []time.Duration) []scenario.IdleCase {
	var cases []scenario.IdleCase
	for _, tick := range ticks {
		cases = append(cases,
			scenario.IdleCase{Tick: tick},
			scenario.IdleCase{Tick: tick, Pending: 1, Delay: time.Hour})
	}
	if !slices.Contains(ticks, time.Millisecond) {
		cases = append(cases, scenario.IdleCase{Tick: time.Millisecond, Pending: 1, Delay: time.Hour})
	}
	return append(cases, scenario.IdleCase{Tick: time.Millisecond, Pending: 10_000, Delay: farDelay, Spread: farSpread})
}

// fullRuns is the number of runs every figure of make bench is the median
// of: five, the fewest a figure of the README or docs/ may rest on.
const fullRuns = 5

// fullPlan is the matrix of make bench: under ten minutes on two cores.
// The keyed scenario's window is half a second, for the five fills of a
// million keys that each keyed set's setup is timed over.
func fullPlan(long bool) plan {
	pending := []int{0, 100_000, 1_000_000}
	if long {
		pending = append(pending, 10_000_000)
	}
	const runs = fullRuns
	return plan{
		runs: runs,
		churn: scenario.ChurnParams{Config: general, Pending: pending, Delay: churnDelay,
			PendingDelay: farDelay, PendingSpread: farSpread, Window: 200 * time.Millisecond, Runs: runs},
		ratio: scenario.RatioParams{Tick: time.Millisecond, Delay: ratioDelay, Pending: 100_000, Ratios: ratios,
			Warmup: 200 * time.Millisecond, Window: 500 * time.Millisecond, Runs: runs},
		storm: scenario.StormParams{Config: general, N: 1_000_000, Spread: 10 * time.Millisecond, Runs: runs, Patience: patience},
		lateness: scenario.LatenessParams{Config: fine, PerRun: 10_000, Bursts: 20, BurstEvery: 10 * time.Millisecond,
			MinDelay: 10 * time.Millisecond, MaxDelay: 60 * time.Millisecond, Runs: runs, Patience: patience},
		memory: scenario.MemoryParams{Config: general, Pending: 1_000_000, PendingDelay: farDelay, PendingSpread: farSpread,
			Settle: 300 * time.Millisecond, ChurnRate: 100_000, ChurnFor: time.Second, Churns: runs, Collections: runs},
		idle: scenario.IdleParams{Cases: idleCases([]time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}),
			WheelSize: 512, Window: 400 * time.Millisecond, Runs: runs},
		rearm: scenario.RearmParams{Config: general, Connections: []int{10_000, 1_000_000}, Delay: idleDelay,
			Spread: time.Second, Window: 200 * time.Millisecond, Runs: runs},
		scaling: scenario.ScalingParams{Config: general, Procs: scalingProcs, Delay: churnDelay,
			Window: 200 * time.Millisecond, Runs: runs},
		keyed: scenario.KeyedParams{Config: general, Keys: []int{0, 1_000_000}, LiveDelay: farDelay, LiveSpread: farSpread,
			Delay: idleDelay, Settle: 300 * time.Millisecond, Window: 500 * time.Millisecond, Runs: runs},
	}
}

// quickPlan is the matrix of make bench-quick: every scenario on every
// contender, smaller, shorter and with fewer runs, so that with a cold
// build it still finishes in about a minute on two cores.
func quickPlan() plan {
	const runs = 2 // a smoke run of the harness: a range needs two
	return plan{
		runs: runs,
		churn: scenario.ChurnParams{Config: general, Pending: []int{0, 100_000}, Delay: churnDelay,
			PendingDelay: farDelay, PendingSpread: farSpread, Window: 40 * time.Millisecond, Runs: runs},
		ratio: scenario.RatioParams{Tick: time.Millisecond, Delay: ratioDelay, Pending: 20_000, Ratios: ratios,
			Warmup: 20 * time.Millisecond, Window: 35 * time.Millisecond, Runs: runs},
		storm: scenario.StormParams{Config: general, N: 50_000, Spread: 10 * time.Millisecond, Runs: runs, Patience: patience},
		lateness: scenario.LatenessParams{Config: fine, PerRun: 1000, Bursts: 5, BurstEvery: 10 * time.Millisecond,
			MinDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond, Runs: runs, Patience: patience},
		memory: scenario.MemoryParams{Config: general, Pending: 100_000, PendingDelay: farDelay, PendingSpread: farSpread,
			Settle: 100 * time.Millisecond, ChurnRate: 50_000, ChurnFor: 70 * time.Millisecond, Churns: runs, Collections: runs},
		idle: scenario.IdleParams{Cases: idleCases([]time.Duration{10 * time.Millisecond}), WheelSize: 512,
			Window: 40 * time.Millisecond, Runs: runs},
		rearm: scenario.RearmParams{Config: general, Connections: []int{10_000, 100_000}, Delay: idleDelay,
			Spread: time.Second, Window: 40 * time.Millisecond, Runs: runs},
		scaling: scenario.ScalingParams{Config: general, Procs: scalingProcs, Delay: churnDelay,
			Window: 30 * time.Millisecond, Runs: runs},
		keyed: scenario.KeyedParams{Config: general, Keys: []int{0, 100_000}, LiveDelay: farDelay, LiveSpread: farSpread,
			Delay: idleDelay, Settle: 100 * time.Millisecond, Window: 40 * time.Millisecond, Runs: runs},
	}
}
