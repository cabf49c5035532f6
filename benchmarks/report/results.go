package report

import (
	"slices"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

// Results is everything one run of the matrix measured, with the
// parameters it measured it with.
type Results struct {
	Machine Machine
	Mode    string // "quick", "full" or "long"
	// Runs is the number of runs every timing is the median of (storms,
	// windows, fills, collections: each scenario's repeats).
	Runs int
	// ChartFormat is "svg" or "png".
	ChartFormat string
	Took        time.Duration
	Contenders  []contender.Contender

	ChurnParams    scenario.ChurnParams
	Churn          []scenario.ChurnRow
	RatioParams    scenario.RatioParams
	Ratio          []scenario.RatioRow
	StormParams    scenario.StormParams
	Storm          []scenario.StormRow
	LatenessParams scenario.LatenessParams
	Lateness       []scenario.LatenessRow
	MemoryParams   scenario.MemoryParams
	Memory         []scenario.MemoryRow
	IdleParams     scenario.IdleParams
	Idle           []scenario.IdleRow
	IdleBaseline   float64
	RearmParams    scenario.RearmParams
	Rearm          []scenario.RearmRow
	ScalingParams  scenario.ScalingParams
	Scaling        []scenario.ScalingRow
	// KeyedSets are the keyed sets of the keyed scenario, the baseline
	// first.
	KeyedSets   []contender.Keyed
	KeyedParams scenario.KeyedParams
	Keyed       []scenario.KeyedRow

	// Scenarios names the scenarios the run measured: churn, ratio, storm,
	// memory, lateness, idle, rearm, scaling, keyed. The report holds the sections
	// and charts of these only; nil means all of them.
	Scenarios []string

	// Notes are the scenarios' own remarks: what did not go cleanly.
	Notes []string
	// Logs are what the timers under test logged.
	Logs []string
	// Durations are the scenarios' run times, in order.
	Durations []Duration
}

// Duration is how long one scenario took.
type Duration struct {
	Name string
	Took time.Duration
}

// Ran reports whether the run measured the named scenario.
func (r *Results) Ran(scenario string) bool {
	return r.Scenarios == nil || slices.Contains(r.Scenarios, scenario)
}

// Narrowed reports whether the run measured only some of the scenarios.
func (r *Results) Narrowed() bool { return r.Scenarios != nil && len(r.Scenarios) < len(ScenarioNames) }

// ScenarioNames are the scenarios of the matrix, in the order a run
// measures them: the names Scenarios may hold.
var ScenarioNames = []string{"churn", "ratio", "storm", "memory", "lateness", "idle", "rearm", "scaling", "keyed"}

// Chart file names, without their extension (ChartFormat), relative to
// the output directory and to the report.
const (
	ChartPending   = "bench-pending"
	ChartCrossover = "bench-crossover"
	ChartLateness  = "bench-lateness"
	ChartRearm     = "bench-rearm"
	ChartScaling   = "bench-scaling"
)
