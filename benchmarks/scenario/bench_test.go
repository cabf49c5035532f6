package scenario

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// The Go benchmarks of scenarios 1 and 2, for go test -bench and benchstat:
//
//	go test -run '^$' -bench . -count 10 ./scenario | tee new.txt
//
// Each contender is a sub-benchmark, time.AfterFunc among them, so that one
// run holds the baseline. Besides ns/op, B/op and allocs/op they report
// cpu-ns/op: process CPU time per operation, which includes the work a
// timer hands to its own goroutines.

var benchConfig = contender.Config{Tick: 10 * time.Millisecond, WheelSize: 512}

// BenchmarkChurn is scenario 1: schedule a timeout a second away and cancel
// it, on one goroutine and on GOMAXPROCS.
func BenchmarkChurn(b *testing.B) {
	for _, c := range contender.All() {
		b.Run(c.Name, func(b *testing.B) { benchChurn(b, c, 0) })
	}
}

// BenchmarkChurnPending is scenario 2: the same with N timeouts pending ten
// minutes away. -short leaves out a million.
func BenchmarkChurnPending(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		if n > 100_000 && testing.Short() {
			continue
		}
		for _, c := range contender.All() {
			b.Run(fmt.Sprintf("N=%s/%s", countName(n), c.Name), func(b *testing.B) { benchChurn(b, c, n) })
		}
	}
}

func countName(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// benchChurn sets a timer up with n pending timeouts once, then runs the
// serial and parallel sub-benchmarks on it.
func benchChurn(b *testing.B, c contender.Contender, n int) {
	t, err := c.New(benchConfig)
	if err != nil {
		b.Fatal(err)
	}
	handles := make([]contender.Handle, n)
	if err := fill(t, handles, 10*time.Minute, 10*time.Second); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { release(c, t, handles) })
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		cpu0, _ := cpuTime()
		for b.Loop() {
			h, err := t.Schedule(time.Second, noop)
			if err != nil {
				b.Fatal(err)
			}
			t.Cancel(h)
		}
		reportCPU(b, cpu0)
	})
	b.Run(fmt.Sprintf("parallel-%d", runtime.GOMAXPROCS(0)), func(b *testing.B) {
		b.ReportAllocs()
		cpu0, _ := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h, err := t.Schedule(time.Second, noop)
				if err != nil {
					b.Error(err)
					return
				}
				t.Cancel(h)
			}
		})
		reportCPU(b, cpu0)
	})
}

// reportCPU adds the process CPU time per operation since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	if cpu1, ok := cpuTime(); ok && b.N > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
