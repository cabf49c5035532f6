package scenario

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
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

// LatenessRow is one contender with the CPUs idle or busy. Quantiles are
// medians of the runs' quantiles; Min and Max the extremes over all runs.
type LatenessRow struct {
	Contender      string
	Busy           bool
	P50, P99, P999 time.Duration
	Min, Max       time.Duration
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
			row := LatenessRow{Contender: c.Name, Busy: busy, Min: time.Duration(1<<63 - 1), Max: -time.Duration(1<<63 - 1)}
			var p50, p99, p999 []float64
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
				row.Min = min(row.Min, time.Duration(late[0]))
				row.Max = max(row.Max, time.Duration(late[len(late)-1]))
				row.Samples = append(row.Samples, late...)
			}
			if len(row.Samples) == 0 {
				continue
			}
			slices.Sort(row.Samples)
			row.P50, row.P99, row.P999 = time.Duration(median(p50)), time.Duration(median(p99)), time.Duration(median(p999))
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
// nanoseconds, and how many never ran.
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
	epoch := time.Now()
	due := make([]int64, p.PerRun)
	ran := make([]int64, p.PerRun) // written once per index, by its task
	var count atomic.Int64
	all := make(chan struct{})
	perBurst := (p.PerRun + p.Bursts - 1) / p.Bursts
	for i := 0; i < p.PerRun; {
		time.Sleep(p.BurstEvery)
		for end := min(i+perBurst, p.PerRun); i < end; i++ {
			delay := p.MinDelay + time.Duration(rng.Int64N(int64(p.MaxDelay-p.MinDelay)))
			idx := i
			at := time.Since(epoch)
			if _, err := t.Schedule(delay, func() {
				ran[idx] = int64(time.Since(epoch))
				if count.Add(1) == int64(p.PerRun) {
					close(all)
				}
			}); err != nil {
				return nil, 0, err
			}
			due[i] = int64(at + delay)
		}
	}
	select {
	case <-all:
	case <-time.After(p.MaxDelay + p.Patience):
		// Tasks may still write ran; read it only through count's order.
		return nil, p.PerRun - int(count.Load()), nil
	}
	late := make([]int64, p.PerRun)
	for i := range late {
		late[i] = ran[i] - due[i]
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
