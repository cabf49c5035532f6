package scenario

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// The Go benchmarks of the keyed scenario:
//
//	go test -run '^$' -bench Keyed -benchmem ./scenario
//
// Each keyed set is filled and measured alone, the hand-written map
// (contender.KeyedBaseline) first, and closed before the next; each
// sub-benchmark reports its ratio to the map's ns/op measured just before
// in the same run, as "x-map" (below 1 is faster). A -bench pattern that
// leaves the map out leaves the ratio out.

// keyedLive is where the live keys' deadlines lie: beyond any run.
const (
	keyedLiveDelay  = 10 * time.Minute
	keyedLiveSpread = 10 * time.Second
	keyedDelay      = 30 * time.Second // an idle session's timeout
)

// BenchmarkKeyed sets a new key, moves its deadline and removes it, with N
// keys live, on one goroutine and on every P (b.RunParallel). -short
// measures 100k live keys instead of a million.
func BenchmarkKeyed(b *testing.B) {
	live := 1_000_000
	if testing.Short() {
		live = 100_000
	}
	for _, n := range []int{0, live} {
		mapNs := map[bool]float64{} // the baseline's ns/op, serial and parallel
		for _, k := range contender.AllKeyed() {
			var set contender.KeyedSet // filled by the first sub-benchmark -bench selects
			for _, parallel := range []bool{false, true} {
				name := fmt.Sprintf("N=%s/%s/serial", countName(n), k.Name)
				if parallel {
					name = fmt.Sprintf("N=%s/%s/parallel", countName(n), k.Name)
				}
				b.Run(name, func(b *testing.B) {
					if set == nil {
						set = fillForBench(b, k, n)
					}
					ns := benchKeyedOps(b, set, n, parallel)
					if k.Name == contender.KeyedBaseline {
						mapNs[parallel] = ns
					}
					if base, ok := mapNs[parallel]; ok {
						b.ReportMetric(ns/base, "x-map")
					}
				})
			}
			if set != nil {
				set.Close()
				// The runtime drops the map's stopped timers from its
				// heaps lazily: let it, before the next set is measured.
				runtime.GC()
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}

// BenchmarkKeyedMemory reports the growth of the live heap per key with a
// million keys live ("B/key"), each set measured alone, the hand-written
// map first, and its ratio to the map's ("x-map"). Each fill takes
// seconds, so each set is measured once.
func BenchmarkKeyedMemory(b *testing.B) {
	const n = 1_000_000
	var mapPerKey float64
	for _, k := range contender.AllKeyed() {
		b.Run(k.Name, func(b *testing.B) {
			for range b.N {
				perKey := keyedBytesPerKey(b, k, n)
				b.ReportMetric(perKey, "B/key")
				if k.Name == contender.KeyedBaseline {
					mapPerKey = perKey
				}
				if mapPerKey > 0 {
					b.ReportMetric(perKey/mapPerKey, "x-map")
				}
			}
		})
	}
}

// fillForBench returns a set of k holding n live keys.
func fillForBench(b *testing.B, k contender.Keyed, n int) contender.KeyedSet {
	b.Helper()
	set, _, _, err := FillKeyed(k, benchConfig, n, keyedLiveDelay, keyedLiveSpread, 0)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	return set
}

// keyedBytesPerKey fills a set of k with n keys, measures the heap per
// key, and closes it, letting the runtime drop stopped timers.
func keyedBytesPerKey(b *testing.B, k contender.Keyed, n int) float64 {
	b.Helper()
	set, perKey, _, err := FillKeyed(k, benchConfig, n, keyedLiveDelay, keyedLiveSpread, 200*time.Millisecond)
	if err != nil {
		b.Fatal(err)
	}
	set.Close()
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	return perKey
}

// keyedBenchSeq keeps the keys of each measurement apart.
var keyedBenchSeq atomic.Uint64

// benchKeyedOps measures b.N operations on set, on one goroutine or on
// every P with b.RunParallel, and returns the wall time per operation.
func benchKeyedOps(b *testing.B, set contender.KeyedSet, n int, parallel bool) float64 {
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			key := uint64(n) + keyedBenchSeq.Add(1)<<32
			for pb.Next() {
				key++
				if err := SetMoveRemove(set, key, keyedDelay); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		key := uint64(n) + keyedBenchSeq.Add(1)<<32
		for range b.N {
			key++
			if err := SetMoveRemove(set, key, keyedDelay); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
}
