package scenario

import (
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// IdleParams shapes scenario 7: the CPU a timer burns with nothing to do,
// at each tick in Ticks (contenders without a tick are measured once).
type IdleParams struct {
	Ticks     []time.Duration
	WheelSize int
	Window    time.Duration
	Runs      int
}

// IdleRow is one contender at one tick, empty or holding one timeout an
// hour away. A wheel that ticks while anything is pending pays for every
// empty tick in the second case. Figures are medians over the windows.
type IdleRow struct {
	Contender string
	Tick      time.Duration // 0 for contenders without a tick
	Far       bool          // one timeout pending an hour away
	// Percent is the process's CPU time over wall time, in percent of one
	// core, minus the same figure with no timer at all (the baseline).
	Percent float64
	// PerTick is that corrected CPU time per tick, for ticked contenders.
	PerTick time.Duration
}

// Idle runs scenario 7 on every contender and returns the rows and the
// baseline percentage they were corrected by.
func Idle(p IdleParams, cs []contender.Contender, prog Progress) ([]IdleRow, float64, []string) {
	var notes []string
	var base []float64
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
		ticks := p.Ticks
		if !c.Ticked {
			ticks = []time.Duration{0}
		}
		for _, tick := range ticks {
			for _, far := range []bool{false, true} {
				row, err := idleOne(p, c, tick, far, baseline, prog)
				if err != nil {
					notes = append(notes, fmt.Sprintf("idle: %s: %v", c.Name, err))
					continue
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, baseline, notes
}

func idleOne(p IdleParams, c contender.Contender, tick time.Duration, far bool, baseline float64, prog Progress) (IdleRow, error) {
	row := IdleRow{Contender: c.Name, Tick: tick, Far: far}
	t, err := c.New(contender.Config{Tick: max(tick, time.Millisecond), WheelSize: p.WheelSize})
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
	var handles []contender.Handle
	if far {
		h, err := t.Schedule(time.Hour, noop)
		if err != nil {
			t.Close()
			return row, err
		}
		handles = append(handles, h)
	}
	defer release(c, t, handles)
	time.Sleep(3*tick + 20*time.Millisecond) // let a wheel reach its steady idle state
	var pcts []float64
	for r := range p.Runs {
		what := "nothing pending"
		if far {
			what = "one timeout 1h away"
		}
		shape := "no tick"
		if tick > 0 {
			shape = "tick " + tick.String()
		}
		status(prog, "idle: %s, %s, %s, window %d/%d", c.Name, shape, what, r+1, p.Runs)
		if pct, ok := busyPercent(p.Window); ok {
			pcts = append(pcts, pct)
		}
	}
	row.Percent = median(pcts) - baseline
	if tick > 0 {
		row.PerTick = time.Duration(row.Percent / 100 * float64(tick))
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
