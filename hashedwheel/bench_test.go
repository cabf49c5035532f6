package hashedwheel

import (
	"cmp"
	"context"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/lateness"
)

// The benchmarks measure the wheel beside time.AfterFunc in the same run
// and report the ratio as the metric "x-AfterFunc" (lower is better), so
// that figures from a noisy machine stay comparable.

// benchDelay is long enough that no benchmark timeout ever fires.
const benchDelay = time.Hour

func noop() {}

// afterFuncStopNs measures time.AfterFunc+Stop, serially or on every P, and
// returns ns per pair.
func afterFuncStopNs(n int, parallel bool) float64 {
	start := time.Now()
	if !parallel {
		for i := 0; i < n; i++ {
			time.AfterFunc(benchDelay, noop).Stop()
		}
	} else {
		procs := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		for p := 0; p < procs; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n/procs; i++ {
					time.AfterFunc(benchDelay, noop).Stop()
				}
			}()
		}
		wg.Wait()
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// reportRatio reports the wheel's ns/op over time.AfterFunc's, measured now
// for the same number of operations.
func reportRatio(b *testing.B, parallel bool) {
	b.StopTimer()
	wheelNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	runtime.GC()
	b.ReportMetric(wheelNs/afterFuncStopNs(b.N, parallel), "x-AfterFunc")
}

// BenchmarkNewTimeoutCancel is the common path of request timeouts:
// schedule, then cancel before the deadline, on one goroutine.
func BenchmarkNewTimeoutCancel(b *testing.B) {
	h := startTimer(b)
	b.ReportAllocs()
	b.ResetTimer()
	newTimeoutCancelNs(h, b.N)
	reportRatio(b, false)
}

// BenchmarkNewTimeoutCancelParallel is the same on every P at once.
func BenchmarkNewTimeoutCancelParallel(b *testing.B) {
	h := startTimer(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, _ := h.NewTimeout(noopTask, benchDelay)
			t.Cancel()
		}
	})
	reportRatio(b, true)
}

// newTimeoutCancelNs measures NewTimeout+Cancel n times on h and returns ns
// per pair.
func newTimeoutCancelNs(h *HashedWheelTimer, n int) float64 {
	start := time.Now()
	for i := 0; i < n; i++ {
		t, _ := h.NewTimeout(noopTask, benchDelay)
		t.Cancel()
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkNewTimeoutCancelPending measures the same pair with a million
// timeouts already pending, beside AfterFunc with a million runtime timers
// pending ("x-AfterFunc"), and beside the same pair on an empty timer
// ("x-empty").
func BenchmarkNewTimeoutCancelPending(b *testing.B) {
	const pending = 1_000_000
	h := startTimer(b)
	var err error
	for i := 0; i < pending && err == nil; i++ {
		_, err = h.NewTimeout(noopTask, benchDelay+time.Duration(i)*time.Millisecond)
	}
	require.NoError(b, err)
	runtimeTimers := make([]*time.Timer, pending)
	for i := range runtimeTimers {
		runtimeTimers[i] = time.AfterFunc(benchDelay+time.Duration(i)*time.Millisecond, noop)
	}
	defer func() {
		for _, t := range runtimeTimers {
			t.Stop()
		}
	}()
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t, _ := h.NewTimeout(noopTask, benchDelay)
		t.Cancel()
	}
	b.StopTimer()
	pendingNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	empty := startTimer(b)
	b.ReportMetric(pendingNs/newTimeoutCancelNs(empty, b.N), "x-empty")
	reportRatio(b, false)
}

// BenchmarkMemoryPerPending reports the heap growth per pending timeout
// with a million pending and the task shared, beside time.AfterFunc.
func BenchmarkMemoryPerPending(b *testing.B) {
	const pending = 1_000_000
	for i := 0; i < b.N; i++ {
		h, fake := newFakeTimer(b)
		base := heapInUse()
		var err error
		for j := 0; j < pending && err == nil; j++ {
			_, err = h.NewTimeout(noopTask, benchDelay)
		}
		require.NoError(b, err)
		// Let the worker move them from the intake stacks into the wheel,
		// whose memory is what stays; the fake clock's Settle orders the
		// worker's writes before this read.
		for h.worker.wheel.size < pending {
			advance(fake, testTick)
		}
		wheelBytes := float64(heapInUse()-base) / pending
		h.Stop()

		base = heapInUse()
		timers := make([]*time.Timer, pending)
		for j := range timers {
			timers[j] = time.AfterFunc(benchDelay, noop)
		}
		runtimeBytes := float64(heapInUse()-base) / pending
		for _, t := range timers {
			t.Stop()
		}
		b.ReportMetric(wheelBytes, "B/pending")
		b.ReportMetric(runtimeBytes, "AfterFunc-B/pending")
	}
}

// storm records the firing lateness of an expiry storm, each task into a
// buffer of its own goroutine's, so that the tasks share no write: the
// storm measures the timer, not its own bookkeeping.
type storm struct {
	late *lateness.Recorder
	n    int64
}

func newStorm(n int) *storm {
	return &storm{late: lateness.New(), n: int64(n)}
}

func (s *storm) record(late time.Duration) { s.late.Record(late) }

// wait returns once every task of the storm has recorded its lateness.
func (s *storm) wait() { s.late.Wait(context.Background(), s.n) }

// stormResults collects one figure per storm.
type stormResults struct {
	schedule, p50, p99, max []time.Duration
}

// add records a storm's scheduling time and lateness percentiles, failing
// the benchmark if anything fired early.
func (r *stormResults) add(b *testing.B, scheduling time.Duration, s *storm) {
	late := s.late.Sorted()
	require.GreaterOrEqual(b, late[0], time.Duration(0), "a timeout fired %v early", -late[0])
	n := len(late)
	r.schedule = append(r.schedule, scheduling)
	r.p50 = append(r.p50, late[n/2])
	r.p99 = append(r.p99, late[n*99/100])
	r.max = append(r.max, late[n-1])
}

// report reports the median scheduling time and, for each lateness
// percentile, its median and its worst over the storms ("p99-late-ms",
// "p99-worst-late-ms"), and the number of storms: a figure is quoted as
// the median over at least 5 of them, with the worst beside it.
func (r *stormResults) report(b *testing.B) {
	b.ReportMetric(medianMs(r.schedule), "ms-to-schedule")
	for _, q := range []struct {
		name string
		ds   []time.Duration
	}{{"p50", r.p50}, {"p99", r.p99}, {"max", r.max}} {
		b.ReportMetric(medianMs(q.ds), q.name+"-late-ms")
		b.ReportMetric(millis(slices.Max(q.ds)), q.name+"-worst-late-ms")
	}
	b.ReportMetric(float64(len(r.p50)), "storms")
}

// median returns the median of xs, which it sorts.
func median[T cmp.Ordered](xs []T) T {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// medianMs returns the median of ds, which it sorts, in milliseconds.
func medianMs(ds []time.Duration) float64 { return millis(median(ds)) }

// millis returns d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

const (
	stormSize  = 1_000_000
	stormDelay = 200 * time.Millisecond
)

// BenchmarkExpiryStorm schedules a million timeouts, each due 200ms after
// it is made, with a fresh closure each, on a 1ms tick and the default
// executor, one storm per iteration (-benchtime 5x for five). It reports
// the median time to schedule them, and the firing lateness, p50, p99 and
// max, each as the median and the worst over the storms; lateness is
// measured by stormLateness, so the scheduling loop reads no clock of its
// own; any early firing fails the benchmark.
func BenchmarkExpiryStorm(b *testing.B) {
	var results stormResults
	for i := 0; i < b.N; i++ {
		h := startTimer(b, WithTickDuration(time.Millisecond))
		s := newStorm(stormSize)
		runtime.GC()
		start := time.Now()
		var err error
		for j := 0; j < stormSize && err == nil; j++ {
			_, err = h.NewTimeout(TaskFunc(func(to Timeout) {
				s.record(stormLateness(to))
			}), stormDelay)
		}
		scheduling := time.Since(start)
		require.NoError(b, err)
		s.wait()
		h.Stop()
		results.add(b, scheduling, s)
	}
	results.report(b)
}

// stormLateness returns how late a running timeout is, on the timer's
// monotonic clock from its deadline: one clock reading, as the runtime's
// timers get in BenchmarkAfterFuncStorm.
func stormLateness(to Timeout) time.Duration { return -to.(*timeout).remaining() }

// BenchmarkAfterFuncStorm is BenchmarkExpiryStorm on time.AfterFunc. The
// runtime's timers have no deadline accessor, so here the loop reads the
// clock itself for each timeout (about 50ns of its scheduling time).
func BenchmarkAfterFuncStorm(b *testing.B) {
	var results stormResults
	for i := 0; i < b.N; i++ {
		s := newStorm(stormSize)
		runtime.GC()
		start := time.Now()
		for j := 0; j < stormSize; j++ {
			due := time.Now().Add(stormDelay)
			time.AfterFunc(stormDelay, func() { s.record(time.Since(due)) })
		}
		scheduling := time.Since(start)
		s.wait()
		results.add(b, scheduling, s)
	}
	results.report(b)
}

// BenchmarkIdle reports the process CPU, in ms per 2s of wall time, of a
// started 1ms-tick timer once it has lingered after its last activity:
// with nothing pending, with one timeout an hour away, and with 10 000
// timeouts ten minutes away; beside a 1ms time.Ticker loop
// ("ticker-cpu-ms/2s"). It also reports the ticks the worker processed per
// second. The process figure includes the runtime's own background work.
func BenchmarkIdle(b *testing.B) {
	for _, c := range []struct {
		name    string
		pending int
		delay   time.Duration
	}{{"nothing-pending", 0, 0}, {"one-1h-away", 1, time.Hour}, {"10000-10min-away", 10_000, 10 * time.Minute}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				idle, ticks, ticking := idleCost(b, c.pending, c.delay)
				b.ReportMetric(idle, "cpu-ms/2s")
				b.ReportMetric(ticks, "ticks/s")
				b.ReportMetric(ticking, "ticker-cpu-ms/2s")
			}
		})
	}
}

// idleCost measures one case of BenchmarkIdle over a 2s window.
func idleCost(b *testing.B, pending int, delay time.Duration) (cpuMs, ticksPerSecond, tickerCPUMs float64) {
	const window = 2 * time.Second
	// Let the collector and the scavenger finish with what earlier
	// benchmarks left, so that their work is not counted here.
	debug.FreeOSMemory()
	h := startTimer(b, WithTickDuration(time.Millisecond))
	for range pending {
		_, err := h.AfterFunc(delay, noop)
		require.NoError(b, err)
	}
	fired := make(chan struct{})
	_, err := h.AfterFunc(0, func() { close(fired) })
	require.NoError(b, err)
	<-fired
	time.Sleep(2 * lingerTime) // past the worker's linger after activity
	debug.FreeOSMemory()
	ticks := h.Stats().Ticks
	before := cpuTime()
	time.Sleep(window)
	idle := cpuTime() - before
	ticks = h.Stats().Ticks - ticks
	h.Stop()

	ticker := time.NewTicker(time.Millisecond)
	stop := time.After(window)
	before = cpuTime()
loop:
	for {
		select {
		case <-ticker.C:
		case <-stop:
			break loop
		}
	}
	ticking := cpuTime() - before
	ticker.Stop()
	return millis(idle), float64(ticks) / window.Seconds(), millis(ticking)
}

// cpuTime returns the CPU time of the process, user and system.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
