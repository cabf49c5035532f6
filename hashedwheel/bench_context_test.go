package hashedwheel

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// contextWithTimeoutNs measures context.WithTimeout and its cancel, on a
// cancellable parent, serially or on every P, and returns ns per pair. In
// parallel each goroutine derives from a parent of its own, made by
// newParent, as a server's requests do; a newParent that returns one
// shared parent measures that parent's lock instead.
func contextWithTimeoutNs(newParent func() context.Context, n int, parallel bool) float64 {
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
			parent := newParent()
			for range n / procs {
				_, cancel := context.WithTimeout(parent, benchDelay)
				cancel()
			}
		}()
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// parentsOfTheirOwn returns a newParent for contextWithTimeoutNs and the
// parallel benchmarks that makes a cancellable parent per call, and a
// function that cancels every parent it made.
func parentsOfTheirOwn() (newParent func() context.Context, cancelAll func()) {
	var mu sync.Mutex
	var cancels []context.CancelFunc
	return func() context.Context {
			parent, cancel := context.WithCancel(context.Background())
			mu.Lock()
			cancels = append(cancels, cancel)
			mu.Unlock()
			return parent
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			for _, cancel := range cancels {
				cancel()
			}
		}
}

// BenchmarkWithTimeoutCancel makes a wheel context on a cancellable parent,
// as a server's request context is, and cancels it before its deadline,
// beside context.WithTimeout in the same run ("x-WithTimeout"), the two in
// alternating batches.
func BenchmarkWithTimeoutCancel(b *testing.B) {
	h := startTimer(b)
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	beside(b, func(n int) {
		for range n {
			_, cancel := h.WithTimeout(parent, benchDelay)
			cancel()
		}
	}, func(n int) {
		for range n {
			_, cancel := context.WithTimeout(parent, benchDelay)
			cancel()
		}
	})
}

// BenchmarkWithTimeoutCancelParallel is BenchmarkWithTimeoutCancel on every
// P at once, each goroutine deriving from a cancellable parent of its own,
// as a server's requests do; the context package's measured after the
// wheel's, the same way.
func BenchmarkWithTimeoutCancelParallel(b *testing.B) {
	newParent, cancelParents := parentsOfTheirOwn()
	defer cancelParents()
	withTimeoutCancelParallel(b, newParent)
}

// BenchmarkWithTimeoutCancelParallelSharedParent is
// BenchmarkWithTimeoutCancelParallel with every goroutine deriving from one
// shared parent: it measures that parent's mutex, which every derivation
// and every cancel takes, as much as either timer.
func BenchmarkWithTimeoutCancelParallelSharedParent(b *testing.B) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	withTimeoutCancelParallel(b, func() context.Context { return parent })
}

// withTimeoutCancelParallel makes and cancels wheel contexts on every P,
// each goroutine on the parent newParent gives it, and reports the ratio
// to context.WithTimeout measured the same way ("x-WithTimeout").
func withTimeoutCancelParallel(b *testing.B, newParent func() context.Context) {
	h := startTimer(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		parent := newParent()
		for pb.Next() {
			_, cancel := h.WithTimeout(parent, benchDelay)
			cancel()
		}
	})
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	runtime.GC()
	b.ReportMetric(ns/contextWithTimeoutNs(newParent, b.N, true), "x-WithTimeout")
}

// beside runs wheel for b.N operations, timed, in batches, each followed by
// as many operations of std, untimed, so that both meet the same machine,
// and reports the ratio of their times ("x-WithTimeout").
func beside(b *testing.B, wheel, std func(n int)) { besideAs(b, "x-WithTimeout", wheel, std) }

// besideAs is beside, reporting the ratio as unit.
func besideAs(b *testing.B, unit string, wheel, std func(n int)) {
	const batch = 2000
	var stdTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		wheel(n)
		b.StopTimer()
		start := time.Now()
		std(n)
		stdTime += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(stdTime), unit)
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
	b.ReportMetric(ns/contextWithTimeoutNs(func() context.Context { return parent }, b.N, false), "x-WithTimeout")
	for _, cancel := range cancels {
		cancel()
	}
}

// BenchmarkMiddlewareChain makes and cancels the chain of a server's
// middleware and a client library: a wheel context on a cancellable
// parent, a context.WithValue on it, as tracing adds, and a
// context.WithCancel child of that, as a client derives per call; beside
// the same chain on context.WithTimeout in the same run ("x-WithTimeout").
// The child joins the wheel context through the WithValue wrapper, which
// the context package does with a goroutine while the child lives.
func BenchmarkMiddlewareChain(b *testing.B) {
	h := startTimer(b)
	benchChain(b, func(parent context.Context) (context.Context, context.CancelFunc) {
		return h.WithTimeout(parent, benchDelay)
	}, true)
}

// BenchmarkWithTimeoutChild makes and cancels a wheel context and a
// context.WithCancel child of it, which joins it through its AfterFunc
// method; beside the same pair on context.WithTimeout ("x-WithTimeout").
func BenchmarkWithTimeoutChild(b *testing.B) {
	h := startTimer(b)
	benchChain(b, func(parent context.Context) (context.Context, context.CancelFunc) {
		return h.WithTimeout(parent, benchDelay)
	}, false)
}

// chainKey is the key of benchChain's value.
type chainKey struct{}

// benchChain measures b.N chains made by withTimeout on a cancellable
// parent: withTimeout, a WithValue if wrapped, and a WithCancel child,
// cancelled child first, beside the same chains on context.WithTimeout.
func benchChain(b *testing.B, withTimeout func(context.Context) (context.Context, context.CancelFunc), wrapped bool) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	beside(b, func(n int) { chain(parent, n, withTimeout, wrapped) }, func(n int) {
		chain(parent, n, func(parent context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(parent, benchDelay)
		}, wrapped)
	})
}

// chain makes and cancels n chains, as benchChain describes.
func chain(parent context.Context, n int, withTimeout func(context.Context) (context.Context, context.CancelFunc), wrapped bool) {
	for range n {
		c, cancel := withTimeout(parent)
		if wrapped {
			c = context.WithValue(c, chainKey{}, "span")
		}
		_, cancelChild := context.WithCancel(c)
		cancelChild()
		cancel()
	}
}

// BenchmarkChildrenThroughAWrapper makes 10 000 context.WithCancel children
// of a context.WithValue of one wheel context, and reports the goroutines
// and heap bytes per child while they live ("goroutines/child",
// "B/child"), beside the same children of a context.WithTimeout's
// context ("std-goroutines/child", "std-B/child").
func BenchmarkChildrenThroughAWrapper(b *testing.B) {
	const children = 10_000
	h := startTimer(b)
	for range b.N {
		wheel, cancelWheel := h.WithTimeout(context.Background(), benchDelay)
		goroutines, bytes := childrenCost(wheel, children)
		cancelWheel()
		std, cancelStd := context.WithTimeout(context.Background(), benchDelay)
		stdGoroutines, stdBytes := childrenCost(std, children)
		cancelStd()
		b.ReportMetric(goroutines, "goroutines/child")
		b.ReportMetric(bytes, "B/child")
		b.ReportMetric(stdGoroutines, "std-goroutines/child")
		b.ReportMetric(stdBytes, "std-B/child")
	}
}

// childrenCost makes n children of a WithValue of parent and returns the
// goroutines and bytes of heap and goroutine stacks per child while they
// live; it cancels them and waits for their goroutines to end.
func childrenCost(parent context.Context, n int) (goroutines, bytes float64) {
	value := context.WithValue(parent, chainKey{}, "span")
	cancels := make([]context.CancelFunc, 0, n)
	goroutinesBefore, memBefore := runtime.NumGoroutine(), heapAndStacksInUse()
	for range n {
		_, cancel := context.WithCancel(value)
		cancels = append(cancels, cancel)
	}
	goroutines = float64(runtime.NumGoroutine()-goroutinesBefore) / float64(n)
	bytes = float64(heapAndStacksInUse()-memBefore) / float64(n)
	for _, cancel := range cancels {
		cancel()
	}
	for runtime.NumGoroutine() > goroutinesBefore {
		runtime.Gosched()
	}
	return goroutines, bytes
}

// heapAndStacksInUse returns the live heap and the goroutine stacks in
// use after two collections.
func heapAndStacksInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

// BenchmarkKeptAfterParentCancel makes 100 000 wheel contexts, each on a
// parent of its own, cancels the parents and drops the contexts without
// calling their CancelFuncs, and reports the heap the timer still keeps
// per context until the deadlines ("B/context"), beside the same with
// context.WithTimeout ("std-B/context"), whose runtime timer the parent's
// cancellation stops.
func BenchmarkKeptAfterParentCancel(b *testing.B) {
	const contexts = 100_000
	h := startTimer(b)
	for range b.N {
		wheel := keptAfterParentCancel(contexts, func(parent context.Context) (context.Context, context.CancelFunc) {
			return h.WithTimeout(parent, benchDelay)
		})
		std := keptAfterParentCancel(contexts, func(parent context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(parent, benchDelay)
		})
		b.ReportMetric(wheel, "B/context")
		b.ReportMetric(std, "std-B/context")
	}
}

// keptAfterParentCancel makes n contexts with withTimeout, each on a
// cancellable parent of its own, reads their Done channels, as a handler
// does, cancels the parents, drops everything without calling the
// CancelFuncs, and returns the heap still in use per context.
func keptAfterParentCancel(n int, withTimeout func(context.Context) (context.Context, context.CancelFunc)) float64 {
	before := heapAndStacksInUse()
	for range n {
		parent, cancelParent := context.WithCancel(context.Background())
		c, _ := withTimeout(parent) // the CancelFunc dropped: what is measured
		_ = c.Done()
		cancelParent()
	}
	return float64(heapAndStacksInUse()-before) / float64(n)
}
