package scenario

import (
	"fmt"
	"runtime"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// noop is the task of timeouts that are not meant to fire during a
// measurement; one shared func, so that scheduling it allocates nothing.
var noop = func() {}

// fill schedules len(handles) timeouts that do not fire during the
// measurement, their delays spread evenly over [base, base+spread), and
// stores their handles. The caller allocates handles, so that a heap
// measurement can leave the slice out.
func fill(t contender.Timer, handles []contender.Handle, base, spread time.Duration) error {
	n := time.Duration(max(len(handles), 1))
	for i := range handles {
		h, err := t.Schedule(base+spread*time.Duration(i)/n, noop)
		if err != nil {
			return fmt.Errorf("filling %d pending timeouts: %w", len(handles), err)
		}
		handles[i] = h
	}
	return nil
}

// release closes t; for a contender whose Close keeps pending timeouts
// (time.AfterFunc), it first cancels the handles the harness kept, so that
// they neither fire nor hold memory during later measurements.
func release(c contender.Contender, t contender.Timer, handles []contender.Handle) {
	if !c.ReleasesOnClose {
		for _, h := range handles {
			if h != nil {
				t.Cancel(h)
			}
		}
	}
	t.Close()
}

// filledTimer is one contender's timer holding N pending timeouts, ready for
// a scenario's runs.
type filledTimer struct {
	contender contender.Contender
	timer     contender.Timer
	handles   []contender.Handle
	// setup is the time taken to schedule the N timeouts, in nanoseconds,
	// over the fills; none for N = 0.
	setup Stat
}

// eachFilledTimer opens, for each N in sizes and each contender, a timer
// holding N pending timeouts with delays spread over [base, base+spread),
// calls run with it, and releases it. Each timer is filled fills times
// over, a fresh one each time, for the spread of the time filling takes;
// run gets the last. A contender that cannot be opened or filled gets a
// note instead of a call. scenario names the notes and the progress line.
func eachFilledTimer(scenario string, sizes []int, fills int, cs []contender.Contender, cfg contender.Config,
	base, spread time.Duration, prog Progress, run func(f filledTimer)) []string {
	var notes []string
	for _, n := range sizes {
		times := max(fills, 1)
		if n == 0 {
			times = 1 // nothing to time
		}
		for _, c := range cs {
			f, err := fillTimes(scenario, c, cfg, n, times, base, spread, prog)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: %s: %v", scenario, c.Name, err))
				continue
			}
			run(f)
			release(c, f.timer, f.handles)
		}
	}
	return notes
}

// fillTimes fills a fresh timer of c with n timeouts fills times, timing
// each fill, and returns the last timer, still filled. fills is at least 1.
func fillTimes(scenario string, c contender.Contender, cfg contender.Config, n, fills int,
	base, spread time.Duration, prog Progress) (filledTimer, error) {
	var took []float64
	for i := 0; ; i++ {
		status(prog, "%s: %s, filling %d pending, fill %d/%d", scenario, c.Name, n, i+1, fills)
		t, err := c.New(cfg)
		if err != nil {
			return filledTimer{}, err
		}
		handles := make([]contender.Handle, n)
		start := time.Now()
		err = fill(t, handles, base, spread)
		took = append(took, float64(time.Since(start)))
		if err != nil || i < fills-1 {
			release(c, t, handles)
		}
		if err != nil {
			return filledTimer{}, err
		}
		if i == fills-1 {
			f := filledTimer{contender: c, timer: t, handles: handles}
			if n > 0 {
				f.setup = statOf(took)
			}
			return f, nil
		}
	}
}

// goroutineCounts is what each scenario measures at: one goroutine, and one
// per GOMAXPROCS where that is more.
func goroutineCounts() []int {
	if parallel := runtime.GOMAXPROCS(0); parallel > 1 {
		return []int{1, parallel}
	}
	return []int{1}
}
