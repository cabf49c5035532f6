package hashedwheel

import (
	"runtime"
	"slices"
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
	ms := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(ms(wheelP50), "p50-start-late-ms")
	b.ReportMetric(ms(wheelMax), "max-start-late-ms")
	b.ReportMetric(ms(coldP50), "cold-p50-start-late-ms")
	b.ReportMetric(ms(coldMax), "cold-max-start-late-ms")
	b.ReportMetric(ms(rtP50), "AfterFunc-p50-start-late-ms")
	b.ReportMetric(ms(rtMax), "AfterFunc-max-start-late-ms")
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
	var held *heapNode
	for range 1_000_000 {
		held = &heapNode{next: held}
	}
	runtime.GC()
	p99, took := make([][]time.Duration, storms), make([][]time.Duration, storms)
	for range b.N {
		for k := range storms {
			h := startTimer(b, WithTickDuration(time.Millisecond))
			s := newStorm(stormSize)
			var err error
			began := time.Now()
			for j := 0; j < stormSize && err == nil; j++ {
				_, err = h.NewTimeout(TaskFunc(func(to Timeout) {
					s.record(stormLateness(to))
				}), stormDelay)
			}
			took[k] = append(took[k], time.Since(began))
			require.NoError(b, err)
			s.wait()
			h.Stop()
			p99[k] = append(p99[k], s.late.Sorted()[stormSize*99/100])
		}
	}
	for k := range storms {
		for _, m := range []struct {
			name string
			ds   []time.Duration
		}{{"p99", p99[k]}, {"schedule", took[k]}} {
			slices.Sort(m.ds)
			b.ReportMetric(float64(m.ds[len(m.ds)/2].Microseconds())/1000, m.name+"-storm"+string(rune('1'+k))+"-ms")
		}
	}
	runtime.KeepAlive(held)
}

// BenchmarkScheduleMillion schedules a million timeouts an hour away on a
// fresh timer, from one goroutine ("serial") or split among GOMAXPROCS
// goroutines ("parallel"), then a million time.AfterFunc calls the same
// way in the same iteration; all share one task, so that neither pays a
// closure. It reports the wheel's median time for the million
// ("ms/million") and its median ratio to the runtime's ("x-AfterFunc").
// Every timer is stopped before the next iteration.
func BenchmarkScheduleMillion(b *testing.B) {
	const n = stormSize
	for _, c := range []struct {
		name      string
		producers int
	}{{"serial", 1}, {"parallel", runtime.GOMAXPROCS(0)}} {
		b.Run(c.name, func(b *testing.B) {
			timeouts, timers := make([]Timeout, n), make([]*time.Timer, n)
			task, f := TaskFunc(func(Timeout) {}), func() {}
			var wheel, ratio []float64
			for range b.N {
				h := startTimer(b)
				took := scheduleMillion(c.producers, n, func(i int) {
					timeouts[i], _ = h.NewTimeout(task, time.Hour)
				})
				if slices.Contains(timeouts, nil) {
					b.Fatal("the timer refused a timeout")
				}
				h.Stop()
				clear(timeouts)
				rt := scheduleMillion(c.producers, n, func(i int) {
					timers[i] = time.AfterFunc(time.Hour, f)
				})
				for _, t := range timers {
					t.Stop()
				}
				clear(timers)
				wheel = append(wheel, float64(took.Microseconds())/1000)
				ratio = append(ratio, float64(took)/float64(rt))
			}
			median := func(xs []float64) float64 {
				slices.Sort(xs)
				return xs[len(xs)/2]
			}
			b.ReportMetric(median(wheel), "ms/million")
			b.ReportMetric(median(ratio), "x-AfterFunc")
		})
	}
}

// scheduleMillion collects garbage, then calls schedule(i) for every i
// below n, split among producers goroutines started together, and returns
// the time from their start to the last one's end.
func scheduleMillion(producers, n int, schedule func(i int)) time.Duration {
	runtime.GC()
	start, wait := concurrently(producers, func(p int) {
		for i := p * n / producers; i < (p+1)*n/producers; i++ {
			schedule(i)
		}
	})
	began := time.Now()
	start()
	wait()
	return time.Since(began)
}
