package scenario

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// RearmParams shapes the re-arm scenario: the idle-connection or heartbeat
// deadline. Each of N connections holds one timeout Delay away, and every
// message on a connection pushes its timeout back to Delay from now
// (Timer.Rearm), so that none ever fires. Messages arrive on connections in
// a scattered order, as they would from many peers.
type RearmParams struct {
	Config contender.Config
	// Connections lists the N to measure at.
	Connections []int
	// Delay is the idle deadline every message pushes back; Spread spreads
	// the first deadlines over [Delay, Delay+Spread).
	Delay, Spread time.Duration
	// Window is the length of one run; Runs the number of runs.
	Window time.Duration
	Runs   int
}

// RearmRow is one contender at one N and goroutine count. Figures are per
// re-arm, over the runs: timings with their spread, bytes and allocations
// as medians.
type RearmRow struct {
	Contender   string
	Connections int
	Goroutines  int // 1: serial; GOMAXPROCS: parallel, each on its own connections
	// NsPerOp is wall time over re-arms: with several goroutines, aggregate
	// throughput, not per-call latency.
	NsPerOp     Stat
	CPUNsPerOp  Stat
	BytesPerOp  float64
	AllocsPerOp float64
	// Rescheduled is the share of re-arms the timer could not move, which
	// it cancelled and scheduled anew instead.
	Rescheduled float64
	// Setup is the time to open the N connections' timeouts, in ns, over
	// Runs fills of a fresh timer.
	Setup  Stat
	Errors int64
}

// Rearm runs the re-arm scenario on every contender.
func Rearm(p RearmParams, cs []contender.Contender, prog Progress) ([]RearmRow, []string) {
	var rows []RearmRow
	var runNotes []string
	notes := eachFilledTimer("re-arm", p.Connections, p.Runs, cs, p.Config, p.Delay, p.Spread, prog, func(f filledTimer) {
		c, n := f.contender, len(f.handles)
		for _, g := range goroutineCounts() {
			var rearms, rescheduled int64
			m := medianPerOp(p.Runs, func(r int) (delta, int64, int64) {
				status(prog, "re-arm: %s, N=%d, %d goroutine(s), run %d/%d", c.Name, n, g, r+1, p.Runs)
				d, ops, renewed, errs := rearmRun(f.timer, f.handles, g, p.Delay, p.Window)
				rearms, rescheduled = rearms+ops, rescheduled+renewed
				return d, ops, errs
			})
			row := RearmRow{Contender: c.Name, Connections: n, Goroutines: g, Setup: f.setup,
				NsPerOp: m.ns, CPUNsPerOp: m.cpu, BytesPerOp: m.bytes, AllocsPerOp: m.allocs,
				Errors: m.errors}
			if rearms > 0 {
				row.Rescheduled = float64(rescheduled) / float64(rearms)
			}
			if row.Errors > 0 {
				runNotes = append(runNotes, fmt.Sprintf("re-arm: %s, N=%d, %d goroutine(s): %d Rearm errors",
					c.Name, n, g, row.Errors))
			}
			rows = append(rows, row)
		}
	})
	notes = append(notes, runNotes...)
	return rows, append(notes, rescheduledNotes(rows, cs)...)
}

// rescheduledNotes says, once per contender, when its re-arms could not
// move a pending timeout and cancelled and scheduled it anew: its figures
// then measure that, not a move.
func rescheduledNotes(rows []RearmRow, cs []contender.Contender) []string {
	var notes []string
	for _, c := range cs {
		least, most := 1.0, 0.0
		for _, r := range rows {
			if r.Contender == c.Name {
				least, most = min(least, r.Rescheduled), max(most, r.Rescheduled)
			}
		}
		if most == 0 {
			continue
		}
		share := fmt.Sprintf("%.0f%%", 100*most)
		if least < most {
			share = fmt.Sprintf("%.0f%% to %.0f%%", 100*least, 100*most)
		}
		notes = append(notes, fmt.Sprintf("re-arm: %s could not move the pending timeout in %s of its re-arms, and "+
			"cancelled and scheduled it anew instead: its figures are those of that fallback", c.Name, share))
	}
	return notes
}

// rearmRun re-arms the connections' timeouts on the given number of
// goroutines for window, each goroutine on its own share of the
// connections, and returns the process-wide deltas, the re-arms done, those
// that scheduled anew, and those that failed. It updates handles.
func rearmRun(t contender.Timer, handles []contender.Handle, goroutines int, delay, window time.Duration) (delta, int64, int64, int64) {
	runtime.GC()
	var (
		stop                 atomic.Bool
		total, renewed, errs atomic.Int64
		wg                   sync.WaitGroup
	)
	start := takeSample(true)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// This goroutine's connections are a block of their own, as
			// connections served by different goroutines are made apart;
			// it visits them in a scattered order that covers them all.
			share := (len(handles) - g + goroutines - 1) / goroutines
			first := g * (len(handles) / goroutines)
			if share <= 0 {
				return
			}
			step := scatterStep(share)
			var n, r, e int64
			j := 0
			for !stop.Load() {
				for range 64 {
					i := first + j
					j += step
					if j >= share {
						j -= share
					}
					h, err := t.Rearm(handles[i], delay)
					if err != nil {
						e++
						continue
					}
					if h != handles[i] {
						handles[i] = h
						r++
					}
					n++
				}
			}
			total.Add(n)
			renewed.Add(r)
			errs.Add(e)
		}()
	}
	time.Sleep(window)
	stop.Store(true)
	wg.Wait()
	return takeSample(true).since(start), total.Load(), renewed.Load(), errs.Load()
}

// scatterStep returns a step coprime with n near n/φ, so that
// j = (j + step) mod n visits every index in [0, n) once per n steps, each
// far from the last: consecutive messages land on unrelated connections.
func scatterStep(n int) int {
	if n <= 2 {
		return 1
	}
	for s := max(n*618/1000, 1); s > 1; s-- {
		if gcd(s, n) == 1 {
			return s
		}
	}
	return 1
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
