package scenario

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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

// StormRow is one contender. Timings, in ns, are over the storms that
// ran to the end: their median, and the least and the most, the most being
// the worst storm's.
type StormRow struct {
	Contender string
	// ScheduleNsPerOp is the wall time to schedule the storm over N.
	ScheduleNsPerOp Stat
	// P50, P99 and Max are each storm's lateness quantiles: how long after
	// its own deadline a task ran (negative if a timer fired early).
	P50, P99, Max Stat
	// Early counts the tasks, over all storms, that ran before their
	// deadline.
	Early int
	// Throughput is N over the time from the first deadline to the last
	// task: expirations per second through to the task running. The last
	// task is seen within the millisecond the harness polls at.
	Throughput Stat
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
		var sched, p50, p99, worst, thr, peaks []float64
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
			p50, p99 = append(p50, float64(res.p50)), append(p99, float64(res.p99))
			worst = append(worst, float64(res.max))
			row.Early += res.early
			thr = append(thr, res.throughput)
			peaks = append(peaks, float64(res.peak))
			row.MaxPeakGoroutines = max(row.MaxPeakGoroutines, res.peak)
		}
		row.ScheduleNsPerOp = statOf(sched)
		row.P50, row.P99, row.Max = statOf(p50), statOf(p99), statOf(worst)
		row.Throughput = statOf(thr)
		row.PeakGoroutines = int(median(peaks))
		if row.Overran > 0 {
			notes = append(notes, fmt.Sprintf("storm: %s: in %d of %d runs scheduling had not finished when the storm fell due", c.Name, row.Overran, p.Runs))
		}
		if row.TimedOut > 0 {
			notes = append(notes, fmt.Sprintf("storm: %s: in %d of %d runs not every task ran within %v of the last deadline", c.Name, row.TimedOut, p.Runs, p.Patience))
		}
		if row.Early > 0 {
			notes = append(notes, fmt.Sprintf("storm: %s: %d of the %d tasks of %d storms ran before their deadline",
				c.Name, row.Early, p.N*len(sched), len(sched)))
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
	schedule          time.Duration
	p50, p99, max     time.Duration // lateness
	early             int
	throughput        float64
	peak              int
	overran, timedOut bool
}

// stormSlots is the number of distinct deadlines a storm's timeouts are
// spread over, evenly within Spread.
const stormSlots = 1000

func stormRun(c contender.Contender, p StormParams, lead time.Duration) (stormResult, error) {
	var res stormResult
	t, err := c.New(p.Config)
	if err != nil {
		return res, err
	}
	defer t.Close() // every timeout has fired (or the run is abandoned)

	// Each task records its lateness, against its own deadline, into its
	// own goroutine's buffer, so that the tasks share no write (a shared
	// counter would measure its own contention). The timeouts of one
	// deadline share one task, made before the clock starts, so that
	// scheduling allocates no closure.
	base := time.Now().Add(lead)
	ran := lateness.New()
	defer ran.Release()
	tasks := make([]func(), stormSlots)
	for k := range tasks {
		due := p.Spread * time.Duration(k) / stormSlots
		tasks[k] = func() { ran.Record(time.Since(base) - due) }
	}
	runtime.GC()
	stopSampling := make(chan struct{})
	peak := make(chan int, 1)
	go samplePeakGoroutines(stopSampling, peak)

	start := time.Now()
	for i := range p.N {
		k := i % stormSlots
		due := base.Add(p.Spread * time.Duration(k) / stormSlots)
		if _, err := t.Schedule(time.Until(due), tasks[k]); err != nil {
			close(stopSampling)
			<-peak
			return res, err
		}
	}
	res.schedule = time.Since(start)
	res.overran = time.Now().After(base)
	lastDue := base.Add(p.Spread * (stormSlots - 1) / stormSlots)
	patience, cancel := context.WithDeadline(context.Background(), lastDue.Add(p.Patience))
	defer cancel()
	res.timedOut = !ran.Wait(patience, int64(p.N))
	end := time.Now()
	close(stopSampling)
	res.peak = <-peak
	if !res.timedOut {
		late := ran.Sorted()
		n := len(late)
		res.p50, res.p99, res.max = late[n/2], late[n*99/100], late[n-1]
		res.early, _ = slices.BinarySearch(late, 0)
		res.throughput = float64(p.N) / end.Sub(base).Seconds()
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
