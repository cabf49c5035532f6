package scenario

import (
	"fmt"
	"runtime"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// MemoryParams shapes scenario 6, in two parts. First a steady churn:
// schedule+cancel pairs at ChurnRate per second for ChurnFor (open loop),
// on a timer with nothing else pending, counting the collections it causes.
// Then the live heap of Pending timeouts, and the cost of a full collection
// while they are pending: what a large pending population costs every GC
// cycle.
type MemoryParams struct {
	Config                      contender.Config
	Pending                     int
	PendingDelay, PendingSpread time.Duration
	// Settle is the wait before measuring the heap, for timers that move
	// new timeouts into their structure asynchronously (hashedwheel moves
	// at most 100 000 per tick).
	Settle    time.Duration
	ChurnRate int
	// ChurnFor is the length of one churn; Churns the number of churns.
	ChurnFor time.Duration
	Churns   int
	// Collections is the number of forced collections whose median is
	// reported.
	Collections int
}

// MemoryRow is one contender.
type MemoryRow struct {
	Contender string
	// BytesPerPending is the growth of the live heap over Pending, the
	// harness's own handle slice excluded. One measurement: it is
	// deterministic up to the allocator's rounding.
	BytesPerPending float64
	// GCCPUFull and GCWallFull are the CPU time the runtime accounts to one
	// forced full collection with Pending timeouts pending, and its wall
	// time, in ns, over Collections collections.
	GCCPUFull, GCWallFull Stat
	// GCCycles is the collections during all the churns together, and
	// GCCPU the CPU time, in ns, accounted to the collections of one churn,
	// over the churns.
	GCCycles uint32
	GCCPU    Stat
	// AllocBytesPerOp is the bytes allocated during the churns per pair.
	AllocBytesPerOp float64
	// AchievedRate is the median over the churns of the pairs per second
	// actually done, against the target ChurnRate.
	AchievedRate float64
	// Pairs is the pairs done in all the churns together.
	Pairs int64
}

// CyclesPerMillion returns the churns' collections per million pairs.
func (m MemoryRow) CyclesPerMillion() float64 {
	if m.Pairs <= 0 {
		return 0
	}
	return float64(m.GCCycles) / float64(m.Pairs) * 1e6
}

// Memory runs scenario 6 on every contender, in this process. What ran
// before in the process (other timers' leftovers, such as the runtime's
// stopped timers, which it frees lazily) weighs on the GC figures; cmd/report
// therefore runs each contender in a fresh process of its own, with
// MemoryOne.
func Memory(p MemoryParams, cs []contender.Contender, prog Progress) ([]MemoryRow, []string) {
	var rows []MemoryRow
	var notes []string
	for _, c := range cs {
		row, err := MemoryOne(p, c, prog)
		if err != nil {
			notes = append(notes, fmt.Sprintf("memory: %s: %v", c.Name, err))
			continue
		}
		notes = append(notes, row.Notes(p)...)
		rows = append(rows, row)
	}
	return rows, notes
}

// Notes returns what the row's figures need said about them.
func (m MemoryRow) Notes(p MemoryParams) []string {
	if m.AchievedRate < 0.9*float64(p.ChurnRate) {
		return []string{fmt.Sprintf("memory: %s reached only %.0f of the %d schedule+cancel pairs per second asked; its GC figures cover less work",
			m.Contender, m.AchievedRate, p.ChurnRate)}
	}
	return nil
}

// MemoryOne runs scenario 6 on one contender.
func MemoryOne(p MemoryParams, c contender.Contender, prog Progress) (MemoryRow, error) {
	row := MemoryRow{Contender: c.Name}
	t, err := c.New(p.Config)
	if err != nil {
		return row, err
	}
	var handles []contender.Handle
	defer func() { release(c, t, handles) }()

	// The churns run first, before the handle slice exists: the
	// collections they cause depend on the live heap, which should hold
	// little else.
	var gcCPU, rate []float64
	var bytes uint64
	for i := range max(p.Churns, 1) {
		status(prog, "memory: %s, churn at %d pairs/s, run %d/%d", c.Name, p.ChurnRate, i+1, max(p.Churns, 1))
		runtime.GC()
		s0 := takeSample(true)
		ops, err := openLoopChurn(t, p.ChurnRate, p.ChurnFor)
		d := takeSample(true).since(s0)
		if err != nil {
			return row, err
		}
		row.GCCycles += d.numGC
		row.Pairs += ops
		bytes += d.bytes
		gcCPU = append(gcCPU, float64(d.gcCPU))
		rate = append(rate, float64(ops)/d.wall.Seconds())
	}
	row.GCCPU, row.AchievedRate = statOf(gcCPU), median(rate)
	row.AllocBytesPerOp = float64(bytes) / float64(max(row.Pairs, 1))

	status(prog, "memory: %s, %d pending", c.Name, p.Pending)
	handles = make([]contender.Handle, p.Pending)
	base := heapAlloc()
	if err := fill(t, handles, p.PendingDelay, p.PendingSpread); err != nil {
		return row, err
	}
	time.Sleep(p.Settle)
	row.BytesPerPending = (float64(heapAlloc()) - float64(base)) / float64(p.Pending)

	var cpu, wall []float64
	for range p.Collections {
		s0 := takeSample(true)
		runtime.GC()
		d := takeSample(true).since(s0)
		cpu, wall = append(cpu, float64(d.gcCPU)), append(wall, float64(d.wall))
	}
	row.GCCPUFull, row.GCWallFull = statOf(cpu), statOf(wall)
	return row, nil
}

// openLoopChurn does schedule+cancel pairs at rate per second for dur,
// catching up every millisecond, and returns the pairs done.
func openLoopChurn(t contender.Timer, rate int, dur time.Duration) (int64, error) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	var done int64
	for {
		elapsed := time.Since(start)
		if elapsed >= dur {
			return done, nil
		}
		want := int64(float64(rate) * elapsed.Seconds())
		for ; done < want; done++ {
			if done%256 == 255 && time.Since(start) >= dur {
				return done, nil // cannot keep up: stop on time anyway
			}
			h, err := t.Schedule(time.Second, noop)
			if err != nil {
				return done, err
			}
			t.Cancel(h)
		}
		<-tick.C
	}
}
