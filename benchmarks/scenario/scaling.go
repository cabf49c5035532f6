package scenario

import (
	"fmt"
	"runtime"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// ScalingParams shapes the scaling scenario: schedule + cancel churn as in
// scenario 1 (nothing else pending), on as many goroutines as GOMAXPROCS,
// at each GOMAXPROCS in Procs: how each timer's cost per operation moves as
// more cores call it at once.
type ScalingParams struct {
	Config contender.Config
	Procs  []int
	// Delay is the delay of each churned timeout.
	Delay time.Duration
	// Window is the length of one run; Runs the number of runs.
	Window time.Duration
	Runs   int
}

// ScalingRow is one contender at one GOMAXPROCS. Figures are per
// schedule+cancel pair over the runs, timings with their spread; NsPerOp
// is aggregate wall time over the pairs of all goroutines.
type ScalingRow struct {
	Contender   string
	Procs       int // GOMAXPROCS, and the number of goroutines
	NsPerOp     Stat
	CPUNsPerOp  Stat
	BytesPerOp  float64
	AllocsPerOp float64
	Errors      int64
}

// Scaling runs the scaling scenario in this process, setting GOMAXPROCS to
// each value in turn and restoring it afterwards. cmd/report instead runs
// ScalingAt in a fresh process per value, so that no value inherits the
// heap and the idle Ps of the one before.
func Scaling(p ScalingParams, cs []contender.Contender, prog Progress) ([]ScalingRow, []string) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var rows []ScalingRow
	var notes []string
	for _, procs := range p.Procs {
		runtime.GOMAXPROCS(procs)
		r, n := ScalingAt(p, cs, prog)
		rows, notes = append(rows, r...), append(notes, n...)
	}
	return rows, notes
}

// ScalingAt measures every contender at the current GOMAXPROCS, with that
// many goroutines.
func ScalingAt(p ScalingParams, cs []contender.Contender, prog Progress) ([]ScalingRow, []string) {
	procs := runtime.GOMAXPROCS(0)
	var rows []ScalingRow
	var notes []string
	for _, c := range cs {
		t, err := c.New(p.Config)
		if err != nil {
			notes = append(notes, fmt.Sprintf("scaling: %s: %v", c.Name, err))
			continue
		}
		m := medianPerOp(p.Runs, func(r int) (delta, int64, int64) {
			status(prog, "scaling: %s, GOMAXPROCS=%d, run %d/%d", c.Name, procs, r+1, p.Runs)
			return churnRun(t, procs, p.Delay, p.Window)
		})
		release(c, t, nil)
		if m.errors > 0 {
			notes = append(notes, fmt.Sprintf("scaling: %s, GOMAXPROCS=%d: %d Schedule errors", c.Name, procs, m.errors))
		}
		rows = append(rows, ScalingRow{Contender: c.Name, Procs: procs, NsPerOp: m.ns, CPUNsPerOp: m.cpu,
			BytesPerOp: m.bytes, AllocsPerOp: m.allocs, Errors: m.errors})
	}
	return rows, notes
}
