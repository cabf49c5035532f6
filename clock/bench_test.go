package clock_test

import (
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
)

// sink keeps the compiler from dropping the clock reads.
var sink int64

// BenchmarkRealNanotime times the read every deadline a timer computes
// starts from, and reports it beside time.Now's in the same run: Nanotime
// reads the monotonic clock alone, time.Now the wall clock too.
func BenchmarkRealNanotime(b *testing.B) {
	r := clock.NewReal()
	for b.Loop() {
		sink += r.Nanotime()
	}
	nanotimeNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	began := time.Now()
	for range b.N {
		sink += time.Now().UnixNano()
	}
	nowNs := float64(time.Since(began).Nanoseconds()) / float64(b.N)
	b.ReportMetric(nanotimeNs/nowNs, "x-time.Now")
}
