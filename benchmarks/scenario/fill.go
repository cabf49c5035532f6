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
	setup     time.Duration // time taken to schedule the N timeouts
}

// eachFilledTimer opens, for each N in sizes and each contender, a timer
// holding N pending timeouts with delays spread over [base, base+spread),
// calls run with it, and releases it. A contender that cannot be opened or
// filled gets a note instead of a call. scenario names the notes and the
// progress line.
func eachFilledTimer(scenario string, sizes []int, cs []contender.Contender, cfg contender.Config,
	base, spread time.Duration, prog Progress, run func(f filledTimer)) []string {
	var notes []string
	for _, n := range sizes {
		for _, c := range cs {
			status(prog, "%s: %s, filling %d pending", scenario, c.Name, n)
			t, err := c.New(cfg)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: %s: %v", scenario, c.Name, err))
				continue
			}
			start := time.Now()
			handles := make([]contender.Handle, n)
			if err := fill(t, handles, base, spread); err != nil {
				notes = append(notes, fmt.Sprintf("%s: %s: %v", scenario, c.Name, err))
			} else {
				run(filledTimer{contender: c, timer: t, handles: handles, setup: time.Since(start)})
			}
			release(c, t, handles)
		}
	}
	return notes
}

// goroutineCounts is what each scenario measures at: one goroutine, and one
// per GOMAXPROCS where that is more.
func goroutineCounts() []int {
	if parallel := runtime.GOMAXPROCS(0); parallel > 1 {
		return []int{1, parallel}
	}
	return []int{1}
}
