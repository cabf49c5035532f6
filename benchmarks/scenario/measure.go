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
