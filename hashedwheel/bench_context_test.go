package hashedwheel

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// contextWithTimeoutNs measures context.WithTimeout and its cancel, on a
// cancellable parent, serially or on every P, and returns ns per pair.
func contextWithTimeoutNs(parent context.Context, n int, parallel bool) float64 {
	procs := 1
	if parallel {
		procs = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / procs {
				_, cancel := context.WithTimeout(parent, benchDelay)
				cancel()
			}
		}()
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkWithTimeoutCancel makes a wheel context on a cancellable parent,
// as a server's request context is, and cancels it before its deadline,
// beside context.WithTimeout in the same run ("x-WithTimeout").
func BenchmarkWithTimeoutCancel(b *testing.B) { benchWithTimeoutCancel(b, false) }

// BenchmarkWithTimeoutCancelParallel is the same on every P at once.
func BenchmarkWithTimeoutCancelParallel(b *testing.B) { benchWithTimeoutCancel(b, true) }

// benchWithTimeoutCancel makes and cancels a wheel context b.N times, on
// every P if parallel, and reports the ratio to context.WithTimeout.
func benchWithTimeoutCancel(b *testing.B, parallel bool) {
	h := startTimer(b)
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	b.ReportAllocs()
	b.ResetTimer()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, cancel := h.WithTimeout(parent, benchDelay)
				cancel()
			}
		})
	} else {
		for range b.N {
			_, cancel := h.WithTimeout(parent, benchDelay)
			cancel()
		}
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	runtime.GC()
	b.ReportMetric(ns/contextWithTimeoutNs(parent, b.N, parallel), "x-WithTimeout")
}

// BenchmarkWithTimeoutCancelLive is BenchmarkWithTimeoutCancel with a
// million contexts live, each kind beside a million of its own: wheel
// contexts for the wheel, context.WithTimeout's for the runtime, whose
// timer heap then holds a million timers.
func BenchmarkWithTimeoutCancelLive(b *testing.B) {
	const live = 1_000_000
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	h := startTimer(b)
	cancels := make([]context.CancelFunc, 0, live)
	for range live {
		_, cancel := h.WithTimeout(parent, benchDelay)
		cancels = append(cancels, cancel)
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, cancel := h.WithTimeout(parent, benchDelay)
		cancel()
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	for _, cancel := range cancels {
		cancel()
	}
	cancels = cancels[:0]
	for range live {
		_, cancel := context.WithTimeout(parent, benchDelay)
		cancels = append(cancels, cancel)
	}
	runtime.GC()
	b.ReportMetric(ns/contextWithTimeoutNs(parent, b.N, false), "x-WithTimeout")
	for _, cancel := range cancels {
		cancel()
	}
}
