package scenario

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// ChurnParams shapes scenarios 1 and 2: schedule + cancel pairs, the
// dominant real workload (most timeouts are cancelled), with N timeouts
// already pending that do not fire during the measurement.
type ChurnParams struct {
	Config contender.Config
	// Pending lists the N to measure at; 0 is scenario 1.
	Pending []int
	// Delay is the delay of each churned timeout, inside the wheel's span.
	Delay time.Duration
	// PendingDelay and PendingSpread place the pre-existing timeouts.
	PendingDelay, PendingSpread time.Duration
	// Window is the length of one run; Runs the number of runs.
	Window time.Duration
	Runs   int
}

// ChurnRow is one contender at one N and goroutine count. Figures are per
// schedule+cancel pair, over the runs: timings with their spread, bytes
// and allocations as medians.
type ChurnRow struct {
	Contender  string
	Pending    int
	Goroutines int // 1: serial; GOMAXPROCS: parallel
	// NsPerOp is wall time over pairs: with several goroutines, aggregate
	// throughput, not per-call latency.
	NsPerOp Stat
	// CPUNsPerOp is process CPU time over pairs: it includes the timer's own
	// goroutines (a wheel's worker, go-zero's loop) and the GC.
	CPUNsPerOp  Stat
	BytesPerOp  float64
	AllocsPerOp float64
	// Setup is the time to schedule the N pending timeouts, in ns, over
	// Runs fills of a fresh timer; none for N = 0.
	Setup  Stat
	Errors int64
}

// Churn runs scenarios 1 and 2 on every contender.
func Churn(p ChurnParams, cs []contender.Contender, prog Progress) ([]ChurnRow, []string) {
	var rows []ChurnRow
	var runNotes []string
	notes := eachFilledTimer("churn", p.Pending, p.Runs, cs, p.Config, p.PendingDelay, p.PendingSpread, prog, func(f filledTimer) {
		c, n := f.contender, len(f.handles)
		for _, g := range goroutineCounts() {
			m := medianPerOp(p.Runs, func(r int) (delta, int64, int64) {
				status(prog, "churn: %s, N=%d, %d goroutine(s), run %d/%d", c.Name, n, g, r+1, p.Runs)
				return churnRun(f.timer, g, p.Delay, p.Window)
			})
			row := ChurnRow{Contender: c.Name, Pending: n, Goroutines: g, Setup: f.setup,
				NsPerOp: m.ns, CPUNsPerOp: m.cpu, BytesPerOp: m.bytes, AllocsPerOp: m.allocs,
				Errors: m.errors}
			if row.Errors > 0 {
				runNotes = append(runNotes, fmt.Sprintf("churn: %s, N=%d, %d goroutine(s): %d Schedule errors",
					c.Name, n, g, row.Errors))
			}
			rows = append(rows, row)
		}
	})
	return rows, append(notes, runNotes...)
}

// churnRun runs schedule+cancel pairs on the given number of goroutines for
// window and returns the process-wide deltas and the number of pairs.
func churnRun(t contender.Timer, goroutines int, delay, window time.Duration) (delta, int64, int64) {
	runtime.GC()
	var (
		stop        atomic.Bool
		total, errs atomic.Int64
		wg          sync.WaitGroup
	)
	start := takeSample(true)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, e int64
			for !stop.Load() {
				for range 64 {
					h, err := t.Schedule(delay, noop)
					if err != nil {
						e++
						continue
					}
					t.Cancel(h)
					n++
				}
			}
			total.Add(n)
			errs.Add(e)
		}()
	}
	time.Sleep(window)
	stop.Store(true)
	wg.Wait()
	return takeSample(true).since(start), total.Load(), errs.Load()
}
