package scenario

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// The Go benchmarks of the keyed scenario:
//
//	go test -run '^$' -bench Keyed -benchmem ./scenario
//
// Each sub-benchmark measures one keyed set, then the hand-written map
// (contender.KeyedBaseline) for the same number of operations on a map
// filled alike, and reports the ratio as "x-map" (below 1 is faster).

// keyedLive is where the live keys' deadlines lie: beyond any run.
const (
	keyedLiveDelay  = 10 * time.Minute
	keyedLiveSpread = 10 * time.Second
	keyedDelay      = 30 * time.Second // an idle session's timeout
)

// BenchmarkKeyed sets a new key, moves its deadline and removes it, with N
// keys live, on one goroutine and on GOMAXPROCS. -short measures 100k live
// keys instead of a million.
func BenchmarkKeyed(b *testing.B) {
	live := 1_000_000
	if testing.Short() {
		live = 100_000
	}
	for _, n := range []int{0, live} {
		b.Run("N="+countName(n), func(b *testing.B) {
			base := fillForBench(b, keyedBaseline(), n)
			defer base.Close()
			for _, k := range contender.AllKeyed() {
				set := base
				if k.Name != contender.KeyedBaseline {
					set = fillForBench(b, k, n)
				}
				b.Run(k.Name+"/serial", func(b *testing.B) { benchKeyedOps(b, set, base, n, 1) })
				procs := runtime.GOMAXPROCS(0)
				b.Run(fmt.Sprintf("%s/parallel-%d", k.Name, procs), func(b *testing.B) { benchKeyedOps(b, set, base, n, procs) })
				if set != base {
					set.Close()
				}
			}
		})
	}
}

// BenchmarkKeyedMemory reports the live heap per key with a million keys
// live ("B/key"), and its ratio to the hand-written map's, measured after
// it in the same process ("x-map").
func BenchmarkKeyedMemory(b *testing.B) {
	const n = 1_000_000
	for _, k := range contender.AllKeyed() {
		b.Run(k.Name, func(b *testing.B) {
			for range b.N {
				perKey := keyedBytesPerKey(b, k, n)
				b.ReportMetric(perKey, "B/key")
				b.ReportMetric(perKey/keyedBytesPerKey(b, keyedBaseline(), n), "x-map")
			}
		})
	}
}

func keyedBaseline() contender.Keyed { return contender.SelectKeyed(contender.KeyedBaseline)[0] }

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
// key, and closes it.
func keyedBytesPerKey(b *testing.B, k contender.Keyed, n int) float64 {
	b.Helper()
	set, perKey, _, err := FillKeyed(k, benchConfig, n, keyedLiveDelay, keyedLiveSpread, 200*time.Millisecond)
	if err != nil {
		b.Fatal(err)
	}
	set.Close()
	return perKey
}

// keyedBenchSeq keeps the keys of each measurement apart.
var keyedBenchSeq atomic.Uint64

// benchKeyedOps measures b.N operations on set on the given number of
// goroutines, then as many on base, and reports the ratio.
func benchKeyedOps(b *testing.B, set, base contender.KeyedSet, n, goroutines int) {
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	ns := keyedOpsNs(set, n, b.N, goroutines)
	b.StopTimer()
	runtime.GC()
	b.ReportMetric(ns/keyedOpsNs(base, n, b.N, goroutines), "x-map")
}

// keyedOpsNs runs ops set+move+remove operations on set, split between
// goroutines, each on new keys of its own above the n live ones, and
// returns the wall time per operation.
func keyedOpsNs(set contender.KeyedSet, n, ops, goroutines int) float64 {
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := uint64(n) + keyedBenchSeq.Add(1)<<32
			for range ops/goroutines + min(1, ops%goroutines/(g+1)) {
				key++
				if err := SetMoveRemove(set, key, keyedDelay); err != nil {
					panic(err) // none of the sets refuses: a bug of the harness
				}
			}
		}()
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / float64(ops)
}
