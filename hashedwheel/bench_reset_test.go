package hashedwheel

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timerResetNs measures time.Timer.Reset pushing a pending timer's
// deadline later, serially or with a timer per P, and returns ns per Reset.
func timerResetNs(n int, parallel bool) float64 {
	procs := 1
	if parallel {
		procs = runtime.GOMAXPROCS(0)
	}
	timers := make([]*time.Timer, procs)
	for i := range timers {
		timers[i] = time.AfterFunc(benchDelay, noop)
	}
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	var wg sync.WaitGroup
	start := time.Now()
	for _, t := range timers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / procs {
				t.Reset(benchDelay)
			}
		}()
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkResetLater is the heartbeat pattern: every message pushes a
// pending timeout's deadline later. It reports the ratio to
// time.Timer.Reset ("x-TimerReset") and to what Reset replaces, Cancel and
// a new AfterFunc ("x-CancelAfterFunc"), measured in the same run.
func BenchmarkResetLater(b *testing.B) {
	h := startTimer(b)
	to, err := h.AfterFunc(benchDelay, noop)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		to.Reset(benchDelay)
	}
	b.StopTimer()
	resetNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(resetNs/timerResetNs(b.N, false), "x-TimerReset")
	start := time.Now()
	for range b.N {
		to.Cancel()
		to, _ = h.AfterFunc(benchDelay, noop)
	}
	b.ReportMetric(resetNs/(float64(time.Since(start).Nanoseconds())/float64(b.N)), "x-CancelAfterFunc")
}

// BenchmarkResetLaterParallel is BenchmarkResetLater on every P at once,
// each re-arming its own timeout, beside time.Timer.Reset likewise.
func BenchmarkResetLaterParallel(b *testing.B) {
	h := startTimer(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		to, err := h.AfterFunc(benchDelay, noop)
		if !assert.NoError(b, err) { // a goroutine of RunParallel: no require
			return
		}
		for pb.Next() {
			to.Reset(benchDelay)
		}
	})
	b.StopTimer()
	resetNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(resetNs/timerResetNs(b.N, true), "x-TimerReset")
}
