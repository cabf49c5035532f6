package hashedwheel

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkSlowTasksDueTogether schedules 1000 timeouts due in the same
// tick whose tasks each block for 10ms, as a handler writing a 504 or
// closing a connection might, on a 5ms tick with the default executor,
// and reports when the tasks start after their deadline, median and
// latest, beside time.AfterFunc in the same run.
func BenchmarkSlowTasksDueTogether(b *testing.B) {
	const n, work, delay = 1000, 10 * time.Millisecond, 50 * time.Millisecond
	var wheelP50, wheelMax, rtP50, rtMax []time.Duration
	for range b.N {
		h := startTimer(b, WithTickDuration(5*time.Millisecond))
		late := startLateness(n, work, func(run func(due time.Time)) {
			task := TaskFunc(func(to Timeout) { run(to.Deadline()) })
			for range n {
				if _, err := h.NewTimeout(task, delay); err != nil {
					b.Fatal(err)
				}
			}
		})
		h.Stop()
		wheelP50, wheelMax = append(wheelP50, late[n/2]), append(wheelMax, late[n-1])

		late = startLateness(n, work, func(run func(due time.Time)) {
			for range n {
				due := time.Now().Add(delay)
				time.AfterFunc(delay, func() { run(due) })
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
	b.ReportMetric(ms(rtP50), "AfterFunc-p50-start-late-ms")
	b.ReportMetric(ms(rtMax), "AfterFunc-max-start-late-ms")
}

// startLateness runs schedule, whose tasks call run with their deadline,
// waits for the n tasks, each of which works for work, and returns how
// late each started, sorted.
func startLateness(n int, work time.Duration, schedule func(run func(due time.Time))) []time.Duration {
	var mu sync.Mutex
	late := make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	wg.Add(n)
	schedule(func(due time.Time) {
		l := time.Since(due)
		mu.Lock()
		late = append(late, l)
		mu.Unlock()
		time.Sleep(work)
		wg.Done()
	})
	wg.Wait()
	slices.Sort(late)
	return late
}

// heapNode makes a pointerful live heap of about 128 MB, as a server holds:
// a million small nodes, each pointing at the next, which the garbage
// collector must mark in every cycle.
type heapNode struct {
	next    *heapNode
	payload [14]*int
}

// BenchmarkExpiryStormLargeHeap is BenchmarkExpiryStorm in a process that
// first builds a 128 MB pointerful live heap, then runs four storms in a
// row: it reports each storm's p99 lateness ("p99-storm1-ms" and so on),
// as medians over the iterations. The first storm drives a collector
// cycle that must mark the large heap.
func BenchmarkExpiryStormLargeHeap(b *testing.B) {
	const storms = 4
	var held *heapNode
	for range 1_000_000 {
		held = &heapNode{next: held}
	}
	runtime.GC()
	p99 := make([][]time.Duration, storms)
	for range b.N {
		for k := range storms {
			h := startTimer(b, WithTickDuration(time.Millisecond))
			s := newStorm(stormSize)
			for j := range stormSize {
				if _, err := h.NewTimeout(TaskFunc(func(to Timeout) {
					s.record(j, time.Since(to.Deadline()))
				}), stormDelay); err != nil {
					b.Fatal(err)
				}
			}
			<-s.done
			h.Stop()
			slices.Sort(s.late)
			p99[k] = append(p99[k], s.late[stormSize*99/100])
		}
	}
	for k, ds := range p99 {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p99-storm"+string(rune('1'+k))+"-ms")
	}
	runtime.KeepAlive(held)
}
