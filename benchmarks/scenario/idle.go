package scenario

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// IdleParams shapes scenario 7: the CPU a timer burns with nothing to do,
// in each of Cases. Contenders without a tick are measured once per
// distinct pending population.
type IdleParams struct {
	Cases     []IdleCase
	WheelSize int
	Window    time.Duration
	Runs      int
}

// settleWindow is how long the process is left alone, after its garbage is
// collected, before the baseline is measured.
const settleWindow = 200 * time.Millisecond

// IdleCase is one idle state: a tick and the timeouts pending, none of
// which fires during the measurement.
type IdleCase struct {
	Tick time.Duration
	// Pending timeouts are spread over [Delay, Delay+Spread).
	Pending       int
	Delay, Spread time.Duration
}

// Describe says what is pending, for tables and progress lines.
func (c IdleCase) Describe() string {
	switch c.Pending {
	case 0:
		return "nothing pending"
	case 1:
		return fmt.Sprintf("one timeout %v away", c.Delay)
	}
	return fmt.Sprintf("%d timeouts %v away", c.Pending, c.Delay)
}

// IdleRow is one contender in one case (Tick 0 for contenders without a
// tick). A wheel that ticks while anything is pending pays for every empty
// tick when something is. Figures are over the windows, with their spread.
type IdleRow struct {
	Contender string
	Tick      time.Duration // 0 for contenders without a tick
	Pending   int
	Delay     time.Duration
	// Percent is the process's CPU time over wall time, in percent of one
	// core, minus the same figure with no timer at all (the baseline).
	Percent Stat
	// PerTick is that corrected CPU time per tick in ns, for ticked
	// contenders.
	PerTick Stat
}

// Per is the corrected CPU time, in ns, the process spends per span of
// wall time.
func (r IdleRow) Per(span time.Duration) Stat {
	return r.Percent.Scale(float64(span) / 100)
}

// Idle runs scenario 7 on every contender and returns the rows and the
// baseline percentage they were corrected by.
func Idle(p IdleParams, cs []contender.Contender, prog Progress) ([]IdleRow, float64, []string) {
	var notes []string
	var base []float64
	// Earlier scenarios leave garbage and a collection or a sweep under
	// way, which would inflate the baseline and turn every figure
	// negative: let the process settle first.
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	time.Sleep(settleWindow)
	for r := range p.Runs {
		status(prog, "idle: baseline, no timer, window %d/%d", r+1, p.Runs)
		if pct, ok := busyPercent(p.Window); ok {
			base = append(base, pct)
		}
	}
	if len(base) == 0 {
		return nil, 0, []string{"idle: getrusage is unavailable on this platform; idle CPU not measured"}
	}
	baseline := median(base)
	var rows []IdleRow
	for _, c := range cs {
		for _, ic := range casesFor(c, p.Cases) {
			row, err := idleOne(p, c, ic, baseline, prog)
			if err != nil {
				notes = append(notes, fmt.Sprintf("idle: %s, %s: %v", c.Name, ic.Describe(), err))
				continue
			}
			rows = append(rows, row)
		}
	}
	return rows, baseline, notes
}

// casesFor returns the cases to measure c in: all of them for a ticked
// contender; for one without a tick, each pending population once, with
// Tick 0.
func casesFor(c contender.Contender, cases []IdleCase) []IdleCase {
	if c.Ticked {
		return cases
	}
	var out []IdleCase
	seen := map[IdleCase]bool{}
	for _, ic := range cases {
		ic.Tick = 0
		if !seen[ic] {
			seen[ic] = true
			out = append(out, ic)
		}
	}
	return out
}

func idleOne(p IdleParams, c contender.Contender, ic IdleCase, baseline float64, prog Progress) (IdleRow, error) {
	row := IdleRow{Contender: c.Name, Tick: ic.Tick, Pending: ic.Pending, Delay: ic.Delay}
	t, err := c.New(contender.Config{Tick: max(ic.Tick, time.Millisecond), WheelSize: p.WheelSize})
	if err != nil {
		return row, err
	}
	// One timeout fires first, so that every timer has started and gone
	// back to having nothing to do.
	fired := make(chan struct{})
	if _, err := t.Schedule(time.Millisecond, func() { close(fired) }); err != nil {
		t.Close()
		return row, err
	}
	<-fired
	handles := make([]contender.Handle, ic.Pending)
	defer func() { release(c, t, handles) }()
	if err := fill(t, handles, ic.Delay, ic.Spread); err != nil {
		return row, err
	}
	time.Sleep(3*ic.Tick + 20*time.Millisecond) // let a wheel reach its steady idle state
	shape := "no tick"
	if ic.Tick > 0 {
		shape = "tick " + ic.Tick.String()
	}
	var pcts []float64
	for r := range p.Runs {
		status(prog, "idle: %s, %s, %s, window %d/%d", c.Name, shape, ic.Describe(), r+1, p.Runs)
		if pct, ok := busyPercent(p.Window); ok {
			pcts = append(pcts, pct)
		}
	}
	row.Percent = statOf(pcts).Less(baseline)
	if ic.Tick > 0 {
		row.PerTick = row.Per(ic.Tick)
	}
	return row, nil
}

// busyPercent returns the process's CPU time over a window of wall time,
// in percent of one core.
func busyPercent(window time.Duration) (float64, bool) {
	s0 := takeSample(false)
	time.Sleep(window)
	d := takeSample(false).since(s0)
	if !d.cpuOK {
		return 0, false
	}
	return 100 * float64(d.cpu) / float64(d.wall), true
}
