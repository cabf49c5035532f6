package hashedwheel

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkSlowTasksDueTogether schedules 1000 timeouts due in the same
// tick whose tasks each block for 10ms, as a handler writing a 504 or
// closing a connection might, on a 5ms tick with the default executor,
// and reports when the tasks start after their deadline, median and
// latest, beside time.AfterFunc in the same run. Each iteration makes a
// timer and runs the tasks twice: first on its new pool, whose goroutines
// ants starts as they are needed ("cold-"), then again once they are
// there, as on a timer in use.
func BenchmarkSlowTasksDueTogether(b *testing.B) {
	const n = slowTasks
	var coldP50, coldMax, wheelP50, wheelMax, rtP50, rtMax []time.Duration
	for range b.N {
		h := startTimer(b, WithTickDuration(slowTick))
		late := slowTasksLate(b, h)
		coldP50, coldMax = append(coldP50, late[n/2]), append(coldMax, late[n-1])
		late = slowTasksLate(b, h)
		wheelP50, wheelMax = append(wheelP50, late[n/2]), append(wheelMax, late[n-1])
		h.Stop()

		late = startLateness(n, slowWork, func(run func(due time.Time)) {
			for range n {
				due := time.Now().Add(slowDelay)
				time.AfterFunc(slowDelay, func() { run(due) })
			}
		})
		rtP50, rtMax = append(rtP50, late[n/2]), append(rtMax, late[n-1])
	}
	b.ReportMetric(medianMs(wheelP50), "p50-start-late-ms")
	b.ReportMetric(medianMs(wheelMax), "max-start-late-ms")
	b.ReportMetric(medianMs(coldP50), "cold-p50-start-late-ms")
	b.ReportMetric(medianMs(coldMax), "cold-max-start-late-ms")
	b.ReportMetric(medianMs(rtP50), "AfterFunc-p50-start-late-ms")
	b.ReportMetric(medianMs(rtMax), "AfterFunc-max-start-late-ms")
}

// heapNode makes a pointerful live heap of about 128 MB, as a server holds:
// a million small nodes, each pointing at the next, which the garbage
// collector must mark in every cycle.
type heapNode struct {
	next *heapNode
	_    [14]*int // nil pointers the collector scans too
}

// BenchmarkExpiryStormLargeHeap is BenchmarkExpiryStorm in a process that
// first builds a 128 MB pointerful live heap, then runs four storms in a
// row: it reports each storm's p99 lateness ("p99-storm1-ms" and so on)
// and the time it took to schedule ("schedule-storm1-ms"), as medians over
// the iterations. The first storm drives a collector cycle that must mark
// the large heap; a storm scheduled in more than stormDelay expires while
// its producer still runs.
func BenchmarkExpiryStormLargeHeap(b *testing.B) {
	const storms = 4
	held := largeHeap()
	p99, took := make([][]time.Duration, storms), make([][]time.Duration, storms)
	for range b.N {
		for k := range storms {
			late, scheduled := largeHeapStorm(b)
			took[k] = append(took[k], scheduled)
			p99[k] = append(p99[k], late[stormSize*99/100])
		}
	}
	for k := range storms {
		storm := "-storm" + string(rune('1'+k)) + "-ms"
		b.ReportMetric(medianMs(p99[k]), "p99"+storm)
		b.ReportMetric(medianMs(took[k]), "schedule"+storm)
	}
	runtime.KeepAlive(held)
}

// BenchmarkFirstStormLargeHeap is one storm of BenchmarkExpiryStormLargeHeap
// per iteration, each after building its heap anew; it reports the median
// p50 and p99 lateness. Run alone in a process with -benchtime 1x, it
// measures the process's first storm, which follows the first growth of
// its heap to the collector's goal: the iterations
// BenchmarkExpiryStormLargeHeap reports come later in their process.
func BenchmarkFirstStormLargeHeap(b *testing.B) {
	var p50, p99 []time.Duration
	for range b.N {
		held := largeHeap()
		late, _ := largeHeapStorm(b)
		p50, p99 = append(p50, late[stormSize/2]), append(p99, late[stormSize*99/100])
		runtime.KeepAlive(held)
	}
	b.ReportMetric(medianMs(p50), "p50-late-ms")
	b.ReportMetric(medianMs(p99), "p99-late-ms")
}

// largeHeap builds a pointerful live heap of about 128 MB and collects the
// rest.
func largeHeap() *heapNode {
	var held *heapNode
	for range 1_000_000 {
		held = &heapNode{next: held}
	}
	runtime.GC()
	return held
}

// largeHeapStorm schedules stormSize timeouts due after stormDelay on a
// new timer with a 1ms tick, waits for them all, and returns their
// lateness, sorted, and the time it took to schedule them.
func largeHeapStorm(b *testing.B) (late []time.Duration, took time.Duration) {
	h := startTimer(b, WithTickDuration(time.Millisecond))
	s := newStorm(stormSize)
	var err error
	began := time.Now()
	for j := 0; j < stormSize && err == nil; j++ {
		_, err = h.NewTimeout(TaskFunc(func(to Timeout) {
			s.record(stormLateness(to))
		}), stormDelay)
	}
	took = time.Since(began)
	require.NoError(b, err)
	s.wait()
	h.Stop()
	return s.late.Sorted(), took
}

// BenchmarkScheduleMillion schedules a million timeouts an hour away on a
// fresh timer, from one goroutine ("serial") or split among GOMAXPROCS
// goroutines ("parallel"), then a million time.AfterFunc calls the same
// way in the same iteration; all share one task, so that neither pays a
// closure. It reports the wheel's median time for the million
// ("ms/million") and its median ratio to the runtime's ("x-AfterFunc").
// Every timer is stopped before the next iteration. The "-batch" cases
// make one NewTimeouts call per goroutine, with its tasks made before, as
// a fan-out has them. The "-floor" cases measure in the wheel's place the
// floor of one NewTimeout, with no timer (floor_bench_test.go): what any
// design that reads the clock and allocates a timeout per call pays.
func BenchmarkScheduleMillion(b *testing.B) {
	for _, c := range []struct {
		name      string
		producers int
	}{{"serial", 1}, {"parallel", runtime.GOMAXPROCS(0)}} {
		b.Run(c.name, func(b *testing.B) {
			timeouts := make([]Timeout, stormSize)
			benchmarkScheduleMillion(b, c.producers, func(h *HashedWheelTimer) (func(p, i, j int) int, func()) {
				return func(_, i, j int) (scheduled int) {
					for ; i < j; i++ {
						t, err := h.NewTimeout(noopTask, time.Hour)
						if err == nil {
							timeouts[i] = t
							scheduled++
						}
					}
					return scheduled
				}, func() { clear(timeouts) }
			})
		})
		b.Run(c.name+"-batch", func(b *testing.B) {
			tasks := slices.Repeat([]TimerTask{noopTask}, stormSize/c.producers+1)
			batches := make([][]Timeout, c.producers)
			benchmarkScheduleMillion(b, c.producers, func(h *HashedWheelTimer) (func(p, i, j int) int, func()) {
				return func(p, i, j int) int {
					batches[p], _ = h.NewTimeouts(time.Hour, tasks[:j-i]...)
					return len(batches[p])
				}, func() { clear(batches) }
			})
		})
		b.Run(c.name+"-floor", func(b *testing.B) {
			timeouts := make([]Timeout, stormSize)
			benchmarkScheduleMillion(b, c.producers, func(h *HashedWheelTimer) (func(p, i, j int) int, func()) {
				stacks, origin := make([]floorStack, c.producers), time.Now()
				return func(p, i, j int) int {
					for k := i; k < j; k++ {
						timeouts[k] = stacks[p].newTimeout(origin, h, noopTask)
					}
					return j - i
				}, func() { clear(timeouts) }
			})
		})
	}
}

// benchmarkScheduleMillion is BenchmarkScheduleMillion with producers
// goroutines. For a timer h, schedule(h) returns what schedules on h, for
// the producer numbered p, the timeouts numbered i up to j and keeps them,
// returning how many it scheduled, and what drops those kept.
func benchmarkScheduleMillion(b *testing.B, producers int, schedule func(h *HashedWheelTimer) (func(p, i, j int) int, func())) {
	const n = stormSize
	timers := make([]*time.Timer, n)
	f := func() {}
	var wheel, ratio []float64
	for range b.N {
		h := startTimer(b)
		var scheduled atomic.Int64
		wheelSchedule, drop := schedule(h)
		took := scheduleMillion(producers, n, func(p, i, j int) {
			scheduled.Add(int64(wheelSchedule(p, i, j)))
		})
		if scheduled.Load() != n {
			b.Fatal("the timer refused a timeout")
		}
		h.Stop()
		drop()
		rt := scheduleMillion(producers, n, func(_, i, j int) {
			for ; i < j; i++ {
				timers[i] = time.AfterFunc(time.Hour, f)
			}
		})
		for _, t := range timers {
			t.Stop()
		}
		clear(timers)
		settleStoppedTimers()
		wheel = append(wheel, millis(took))
		ratio = append(ratio, float64(took)/float64(rt))
	}
	b.ReportMetric(median(wheel), "ms/million")
	b.ReportMetric(median(ratio), "x-AfterFunc")
}

// settleStoppedTimers has every processor drop the runtime timers stopped
// on it. A stopped time.Timer stays in its processor's heap, reachable,
// until that processor next schedules a goroutine: a million left there
// would raise the collector's goal, and their removal take the processor,
// during whatever runs next.
func settleStoppedTimers() {
	procs := int32(runtime.GOMAXPROCS(0))
	var arrived atomic.Int32
	start, wait := concurrently(int(procs), func(int) {
		arrived.Add(1)
		for arrived.Load() < procs {
			runtime.Gosched() // each a pass of the scheduler, which drops them
		}
	})
	start()
	wait()
}

// scheduleMillion collects garbage, then has producers goroutines,
// started together, share the numbers below n: each calls schedule(p, i,
// j) once, p its own number, for its numbers i up to j. It returns the
// time from their start to the last one's end.
func scheduleMillion(producers, n int, schedule func(p, i, j int)) time.Duration {
	runtime.GC()
	start, wait := concurrently(producers, func(p int) {
		schedule(p, p*n/producers, (p+1)*n/producers)
	})
	began := time.Now()
	start()
	wait()
	return time.Since(began)
}
