package scenario

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// RatioParams shapes scenario 3: a steady state with Pending timeouts in
// flight, each with the same delay D, on wheels whose size W makes
// D/(W·tick) each of Ratios. Timeouts arrive at Pending/D per second and
// fire; the population is seeded with remaining delays spread evenly over
// (0, D], which is what the steady state looks like, so no warm-up of D is
// needed.
//
// D stays fixed and W varies, rather than the other way round, so that the
// arrival rate stays within what every contender can sustain, while the
// number of timeouts per bucket, N/W, grows large enough for a rounds
// wheel's visits to show above the cost of ticking. A rounds wheel visits
// each timeout about D/(W·tick) times before it fires; a hierarchical one
// with the same W moves it once per level, about log_W(D/tick) times. CPU
// per timeout therefore grows linearly with the ratio for the first and
// slowly for the second: the crossover.
type RatioParams struct {
	Tick    time.Duration
	Delay   time.Duration
	Pending int
	Ratios  []float64
	Warmup  time.Duration
	Window  time.Duration
	Runs    int
}

// WheelSize returns the W that makes D/(W·tick) = ratio, at least 2.
func (p RatioParams) WheelSize(ratio float64) int {
	return max(int(math.Round(float64(p.Delay)/(ratio*float64(p.Tick)))), 2)
}

// RatioRow is one contender at one ratio; figures are over the windows:
// CPU times with their spread, the others medians.
type RatioRow struct {
	Contender string
	Ratio     float64 // D/(W·tick) as configured
	WheelSize int
	Rate      float64 // arrivals (and expiries) per second
	// CPUPerTimeout is process CPU time over the timeouts that went through
	// the timer in the window (rate × window): schedule, every visit or
	// move, and the expiry.
	CPUPerTimeout Stat
	// CPUPerTick is process CPU time per tick.
	CPUPerTick Stat
	// Cores is process CPU time over wall time.
	Cores float64
	// FiredShare is the timeouts fired in the window over those due: below
	// 1, the timer (or the feeder) falls behind.
	FiredShare float64
}

// Ratio runs scenario 3 on every contender.
func Ratio(p RatioParams, cs []contender.Contender, prog Progress) ([]RatioRow, []string) {
	var rows []RatioRow
	var notes []string
	for _, r := range p.Ratios {
		for _, c := range cs {
			status(prog, "crossover: %s, D/(W·tick)=%g, seeding %d pending", c.Name, r, p.Pending)
			row, err := ratioOne(p, c, r, prog)
			if err != nil {
				notes = append(notes, fmt.Sprintf("crossover: %s at %g: %v", c.Name, r, err))
				continue
			}
			if row.FiredShare < 0.9 {
				notes = append(notes, fmt.Sprintf("crossover: %s at D/(W·tick)=%g fired only %.0f%% of the timeouts due in the window: it cannot keep up with %.0f timeouts/s at that wheel size",
					c.Name, r, 100*row.FiredShare, row.Rate))
			}
			rows = append(rows, row)
		}
	}
	return rows, notes
}

func ratioOne(p RatioParams, c contender.Contender, r float64, prog Progress) (RatioRow, error) {
	d := p.Delay
	row := RatioRow{Contender: c.Name, Ratio: r, WheelSize: p.WheelSize(r), Rate: float64(p.Pending) / d.Seconds()}
	t, err := c.New(contender.Config{Tick: p.Tick, WheelSize: row.WheelSize})
	if err != nil {
		return row, err
	}
	var (
		fired   atomic.Int64
		task    = func() { fired.Add(1) }
		handles []contender.Handle // kept only for a Close that keeps them
	)
	// keep is called by one goroutine at a time: this one while seeding,
	// then the feeder, which release waits for.
	keep := func(h contender.Handle) {
		if !c.ReleasesOnClose {
			handles = append(handles, h)
		}
	}
	defer func() { release(c, t, handles) }()
	for i := range p.Pending {
		h, err := t.Schedule(d*time.Duration(i+1)/time.Duration(p.Pending), task)
		if err != nil {
			return row, err
		}
		keep(h)
	}
	runtime.GC()

	stop := make(chan struct{})
	fed := make(chan error, 1)
	go func() { fed <- feed(t, d, row.Rate, task, keep, stop) }()
	time.Sleep(p.Warmup)
	var perTimeout, perTick, cores, share []float64
	for run := range p.Runs {
		status(prog, "crossover: %s, D/(W·tick)=%g, window %d/%d", c.Name, r, run+1, p.Runs)
		f0 := fired.Load()
		s0 := takeSample(false)
		time.Sleep(p.Window)
		s := takeSample(false).since(s0)
		due := row.Rate * s.wall.Seconds()
		share = append(share, float64(fired.Load()-f0)/due)
		if s.cpuOK {
			perTimeout = append(perTimeout, float64(s.cpu)/due)
			perTick = append(perTick, float64(s.cpu)/(float64(s.wall)/float64(p.Tick)))
			cores = append(cores, float64(s.cpu)/float64(s.wall))
		}
	}
	close(stop)
	if err := <-fed; err != nil {
		return row, err
	}
	row.CPUPerTimeout, row.CPUPerTick = statOf(perTimeout), statOf(perTick)
	row.Cores, row.FiredShare = median(cores), median(share)
	return row, nil
}

// feed schedules timeouts with delay d at rate per second, catching up
// every millisecond, until stop is closed.
func feed(t contender.Timer, d time.Duration, rate float64, task func(), keep func(contender.Handle), stop <-chan struct{}) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	var sent int64
	for {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		want := int64(rate * time.Since(start).Seconds())
		for i := 0; sent < want; i++ {
			if i%256 == 255 { // a feeder that cannot keep up still stops
				select {
				case <-stop:
					return nil
				default:
				}
			}
			h, err := t.Schedule(d, task)
			if err != nil {
				return err
			}
			keep(h)
			sent++
		}
	}
}
