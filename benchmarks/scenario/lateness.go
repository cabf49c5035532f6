package scenario

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/internal/lateness"
)

// LatenessParams shapes scenario 5: PerRun timeouts per run, scheduled in
// Bursts every BurstEvery, with delays uniform in [MinDelay, MaxDelay).
// Lateness is the instant the task ran minus the instant it was due, the
// caller's view: the moment Schedule was called plus the delay. It is
// signed, so a timer that fires early shows a negative minimum.
type LatenessParams struct {
	Config             contender.Config
	PerRun, Bursts     int
	BurstEvery         time.Duration
	MinDelay, MaxDelay time.Duration
	Runs               int
	Patience           time.Duration
}

// LatenessRow is one contender with the CPUs idle or busy. Each figure, in
// ns, is over the runs: the runs' quantiles, least and greatest lateness,
// with their spread, so that Min.Min and Max.Max are the extremes over all
// runs.
type LatenessRow struct {
	Contender      string
	Busy           bool
	P50, P99, P999 Stat
	Min, Max       Stat
	// Samples holds every run's lateness, sorted, in nanoseconds.
	Samples []int64
	Lost    int // timeouts that had not run after Patience
}

// Lateness runs scenario 5 on every contender, CPUs idle then busy.
func Lateness(p LatenessParams, cs []contender.Contender, prog Progress) ([]LatenessRow, []string) {
	var rows []LatenessRow
	var notes []string
	for _, busy := range []bool{false, true} {
		load := "idle"
		if busy {
			load = "busy"
		}
		for _, c := range cs {
			row := LatenessRow{Contender: c.Name, Busy: busy}
			var p50, p99, p999, least, most []float64
			for r := range p.Runs {
				status(prog, "lateness: %s, CPUs %s, run %d/%d", c.Name, load, r+1, p.Runs)
				late, lost, err := latenessRun(c, p, busy, uint64(r))
				if err != nil {
					notes = append(notes, fmt.Sprintf("lateness: %s: %v", c.Name, err))
					break
				}
				row.Lost += lost
				if len(late) == 0 {
					continue
				}
				slices.Sort(late)
				p50 = append(p50, float64(quantile(late, 0.50)))
				p99 = append(p99, float64(quantile(late, 0.99)))
				p999 = append(p999, float64(quantile(late, 0.999)))
				least = append(least, float64(late[0]))
				most = append(most, float64(late[len(late)-1]))
				row.Samples = append(row.Samples, late...)
			}
			if len(row.Samples) == 0 {
				continue
			}
			slices.Sort(row.Samples)
			row.P50, row.P99, row.P999 = statOf(p50), statOf(p99), statOf(p999)
			row.Min, row.Max = statOf(least), statOf(most)
			if row.Lost > 0 {
				notes = append(notes, fmt.Sprintf("lateness: %s, CPUs %s: %d timeouts had not run %v after their deadline; left out",
					c.Name, load, row.Lost, p.Patience))
			}
			rows = append(rows, row)
		}
	}
	return rows, notes
}

// latenessRun schedules one run's timeouts and returns their lateness in
// nanoseconds, and how many never ran. Each task records its lateness into
// its own goroutine's buffer, so that the tasks share no write.
func latenessRun(c contender.Contender, p LatenessParams, busy bool, seed uint64) ([]int64, int, error) {
	t, err := c.New(p.Config)
	if err != nil {
		return nil, 0, err
	}
	defer t.Close()
	if busy {
		stop := hog()
		defer stop()
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	ran := lateness.New()
	defer ran.Release()
	epoch := time.Now()
	perBurst := (p.PerRun + p.Bursts - 1) / p.Bursts
	for i := 0; i < p.PerRun; {
		time.Sleep(p.BurstEvery)
		for end := min(i+perBurst, p.PerRun); i < end; i++ {
			delay := p.MinDelay + time.Duration(rng.Int64N(int64(p.MaxDelay-p.MinDelay)))
			due := time.Since(epoch) + delay // read before the timer reads its own clock
			if _, err := t.Schedule(delay, func() { ran.Record(time.Since(epoch) - due) }); err != nil {
				return nil, 0, err
			}
		}
	}
	patience, cancel := context.WithTimeout(context.Background(), p.MaxDelay+p.Patience)
	defer cancel()
	if !ran.Wait(patience, int64(p.PerRun)) {
		return nil, p.PerRun - int(ran.Count()), nil
	}
	sorted := ran.Sorted()
	late := make([]int64, len(sorted))
	for i, d := range sorted {
		late[i] = int64(d)
	}
	return late, 0, nil
}

// hog keeps every P busy with CPU-bound goroutines until the returned stop
// is called, to measure lateness with no idle CPU.
func hog() (stop func()) {
	var done atomic.Bool
	n := runtime.GOMAXPROCS(0)
	exited := make(chan struct{}, n)
	for range n {
		go func() {
			x := uint64(1)
			for !done.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			if x == 0 { // keeps the loop from being optimised away
				runtime.Gosched()
			}
			exited <- struct{}{}
		}()
	}
	return func() {
		done.Store(true)
		for range n {
			<-exited
		}
	}
}
