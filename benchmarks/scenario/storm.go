package scenario

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/internal/lateness"
)

// StormParams shapes scenario 4: N timeouts, all due within the same
// Spread (10ms), scheduled as fast as one goroutine can.
type StormParams struct {
	Config contender.Config
	N      int
	Spread time.Duration
	Runs   int
	// Patience bounds the wait for the last task, after the last deadline.
	Patience time.Duration
}

// StormRow is one contender; figures are medians over the runs.
type StormRow struct {
	Contender string
	// ScheduleNsPerOp is the wall time to schedule the storm over N.
	ScheduleNsPerOp float64
	// LastAfterDue is how long after the last deadline the last task ran
	// (negative if a timer fired early); WorstLastAfterDue the longest over
	// the runs.
	LastAfterDue, WorstLastAfterDue time.Duration
	// Throughput is N over the time from the first deadline to the last
	// task: expirations per second through to the task running.
	Throughput float64
	// PeakGoroutines is the most goroutines seen, sampled every
	// millisecond; MaxPeakGoroutines the highest over the runs.
	PeakGoroutines, MaxPeakGoroutines int
	// Overran counts runs whose scheduling had not finished by the first
	// deadline; TimedOut runs whose tasks did not all run in Patience.
	Overran, TimedOut int
}

// Storm runs scenario 4 on every contender.
func Storm(p StormParams, cs []contender.Contender, prog Progress) ([]StormRow, []string) {
	var rows []StormRow
	var notes []string
	for _, c := range cs {
		status(prog, "storm: %s, calibrating", c.Name)
		lead, err := stormLead(c, p)
		if err != nil {
			notes = append(notes, fmt.Sprintf("storm: %s: %v", c.Name, err))
			continue
		}
		row := StormRow{Contender: c.Name}
		var sched, after, thr, peaks []float64
		for r := range p.Runs {
			status(prog, "storm: %s, %d timeouts, run %d/%d", c.Name, p.N, r+1, p.Runs)
			res, err := stormRun(c, p, lead)
			if err != nil {
				notes = append(notes, fmt.Sprintf("storm: %s: %v", c.Name, err))
				break
			}
			// The next run falls due a little after this one's scheduling
			// would have finished: long enough, with no idle wait wasted.
			lead = res.schedule*3/2 + 200*time.Millisecond
			if res.overran {
				row.Overran++
				lead = res.schedule * 2
			}
			if res.timedOut {
				row.TimedOut++
				continue
			}
			sched = append(sched, float64(res.schedule)/float64(p.N))
			after = append(after, float64(res.lastAfterDue))
			if len(after) == 1 || res.lastAfterDue > row.WorstLastAfterDue {
				row.WorstLastAfterDue = res.lastAfterDue
			}
			thr = append(thr, res.throughput)
			peaks = append(peaks, float64(res.peak))
			row.MaxPeakGoroutines = max(row.MaxPeakGoroutines, res.peak)
		}
		row.ScheduleNsPerOp = median(sched)
		row.LastAfterDue = time.Duration(median(after))
		row.Throughput = median(thr)
		row.PeakGoroutines = int(median(peaks))
		if row.Overran > 0 {
			notes = append(notes, fmt.Sprintf("storm: %s: in %d of %d runs scheduling had not finished when the storm fell due", c.Name, row.Overran, p.Runs))
		}
		if row.TimedOut > 0 {
			notes = append(notes, fmt.Sprintf("storm: %s: in %d of %d runs not every task ran within %v of the last deadline", c.Name, row.TimedOut, p.Runs, p.Patience))
		}
		rows = append(rows, row)
	}
	return rows, notes
}

// stormLead estimates how far ahead the first run's storm must fall due for
// its scheduling to finish first, from the cost of scheduling a sample,
// with a wide margin: a small sample misses the collections a large storm
// triggers.
func stormLead(c contender.Contender, p StormParams) (time.Duration, error) {
	t, err := c.New(p.Config)
	if err != nil {
		return 0, err
	}
	handles := make([]contender.Handle, min(p.N/10, 20_000))
	start := time.Now()
	err = fill(t, handles, time.Hour, 0)
	perOp := time.Since(start) / time.Duration(max(len(handles), 1))
	for _, h := range handles {
		if h != nil {
			t.Cancel(h)
		}
	}
	t.Close()
	return perOp*time.Duration(p.N)*3 + 200*time.Millisecond, err
}

type stormResult struct {
	schedule, lastAfterDue time.Duration
	throughput             float64
	peak                   int
	overran, timedOut      bool
}

func stormRun(c contender.Contender, p StormParams, lead time.Duration) (stormResult, error) {
	var res stormResult
	t, err := c.New(p.Config)
	if err != nil {
		return res, err
	}
	defer t.Close() // every timeout has fired (or the run is abandoned)
	runtime.GC()

	// Each task records when it ran into its own goroutine's buffer, so
	// that the tasks share no write (a shared counter would measure its own
	// contention): the last to run is the latest instant recorded.
	base := time.Now().Add(lead)
	ran := lateness.New()
	defer ran.Release()
	task := func() { ran.Record(time.Since(base)) }
	stopSampling := make(chan struct{})
	peak := make(chan int, 1)
	go samplePeakGoroutines(stopSampling, peak)

	start := time.Now()
	for i := range p.N {
		due := base.Add(p.Spread * time.Duration(i%1000) / 1000)
		if _, err := t.Schedule(time.Until(due), task); err != nil {
			close(stopSampling)
			<-peak
			return res, err
		}
	}
	res.schedule = time.Since(start)
	res.overran = time.Now().After(base)
	lastDue := base.Add(p.Spread * 999 / 1000)
	patience, cancel := context.WithDeadline(context.Background(), lastDue.Add(p.Patience))
	defer cancel()
	res.timedOut = !ran.Wait(patience, int64(p.N))
	close(stopSampling)
	res.peak = <-peak
	if !res.timedOut {
		last, _ := ran.Max()
		lastRan := base.Add(last)
		res.lastAfterDue = lastRan.Sub(lastDue)
		res.throughput = float64(p.N) / lastRan.Sub(base).Seconds()
	}
	return res, nil
}

// samplePeakGoroutines reports on peak the most goroutines seen until stop
// is closed.
func samplePeakGoroutines(stop <-chan struct{}, peak chan<- int) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	most := runtime.NumGoroutine()
	for {
		select {
		case <-stop:
			peak <- max(most, runtime.NumGoroutine())
			return
		case <-tick.C:
			most = max(most, runtime.NumGoroutine())
		}
	}
}
