package scenario

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// sample is a reading of the process's clocks and allocator counters.
type sample struct {
	wall    time.Time
	cpu     time.Duration
	cpuOK   bool
	mallocs uint64
	bytes   uint64
	numGC   uint32
	gcCPU   float64 // seconds
}

var gcCPUMetric = []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}

// takeSample reads the clocks; withMem adds runtime.ReadMemStats, which
// stops the world briefly, so it is taken only around whole runs.
func takeSample(withMem bool) sample {
	s := sample{wall: time.Now()}
	s.cpu, s.cpuOK = cpuTime()
	if withMem {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.mallocs, s.bytes, s.numGC = ms.Mallocs, ms.TotalAlloc, ms.NumGC
		metrics.Read(gcCPUMetric)
		if gcCPUMetric[0].Value.Kind() == metrics.KindFloat64 {
			s.gcCPU = gcCPUMetric[0].Value.Float64()
		}
	}
	return s
}

// delta is the difference between two samples.
type delta struct {
	wall    time.Duration
	cpu     time.Duration
	cpuOK   bool
	mallocs uint64
	bytes   uint64
	numGC   uint32
	gcCPU   time.Duration
}

func (s sample) since(start sample) delta {
	return delta{
		wall:    s.wall.Sub(start.wall),
		cpu:     s.cpu - start.cpu,
		cpuOK:   s.cpuOK && start.cpuOK,
		mallocs: s.mallocs - start.mallocs,
		bytes:   s.bytes - start.bytes,
		numGC:   s.numGC - start.numGC,
		gcCPU:   time.Duration((s.gcCPU - start.gcCPU) * 1e9),
	}
}

// heapAlloc returns the live heap after two full collections, the second
// one sweeping what the first freed.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// perOp is, over runs, the figures of one operation: wall time and
// process CPU time with their spread, and the median bytes and
// allocations.
type perOp struct {
	ns, cpu       Stat
	bytes, allocs float64
	errors        int64
}

// medianPerOp calls run runs times and returns the per-operation figures
// of the runs that did any operation. run returns the process-wide
// deltas, the operations done and the operations that failed.
func medianPerOp(runs int, run func(r int) (delta, int64, int64)) perOp {
	var m perOp
	var wall, cpu, bytes, allocs []float64
	for r := range runs {
		d, ops, errs := run(r)
		m.errors += errs
		if ops == 0 {
			continue
		}
		f := float64(ops)
		wall = append(wall, float64(d.wall)/f)
		if d.cpuOK {
			cpu = append(cpu, float64(d.cpu)/f)
		}
		bytes = append(bytes, float64(d.bytes)/f)
		allocs = append(allocs, float64(d.mallocs)/f)
	}
	m.ns, m.cpu = statOf(wall), statOf(cpu)
	m.bytes, m.allocs = median(bytes), median(allocs)
	return m
}
