package scenario

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// KeyedParams shapes the keyed scenario: one deadline per key, the session
// or connection timeout found by its key. Each set holds N live keys whose
// deadlines are far away, and each operation sets a new key, moves its
// deadline and removes it: go-zero's SetTimer, MoveTimer and RemoveTimer.
type KeyedParams struct {
	Config contender.Config
	// Keys lists the N live keys to measure at.
	Keys []int
	// LiveDelay and LiveSpread place the live keys' deadlines, which do
	// not pass during the measurement.
	LiveDelay, LiveSpread time.Duration
	// Delay is the delay of each operation's Set and Move.
	Delay time.Duration
	// Settle is the wait after filling, before the heap is measured, for
	// timers that take new timeouts in asynchronously.
	Settle time.Duration
	// Window is the length of one run; Runs the number of runs.
	Window time.Duration
	Runs   int
}

// KeyedRow is one keyed set at one N and goroutine count. Figures are per
// set+move+remove, over the runs: timings with their spread, bytes and
// allocations as medians.
type KeyedRow struct {
	Contender  string
	Keys       int
	Goroutines int // 1: serial; GOMAXPROCS: parallel, each on keys of its own
	// NsPerOp is wall time over operations: with several goroutines,
	// aggregate throughput, not per-call latency.
	NsPerOp     Stat
	CPUNsPerOp  Stat
	BytesPerOp  float64
	AllocsPerOp float64
	// BytesPerKey is the growth of the live heap over the N live keys,
	// which share one value, at the first fill, the only one in a fresh
	// process: the runtime keeps what later fills would reuse. 0 for N = 0.
	BytesPerKey float64
	// Setup is the time taken to set the N live keys, in ns, over Runs
	// fills of a fresh set; none for N = 0.
	Setup  Stat
	Errors int64
}

// sharedItem is the value of every live key, so that the heap measured
// holds the sets, not the values.
var sharedItem = &contender.Item{}

// Keyed runs the keyed scenario on every keyed set, in this process.
// cmd/report instead runs KeyedOne for each set in a fresh process, so
// that no set's heap measurement sees another's leftovers: the runtime
// keeps the capacity of its timer heaps, and frees stopped timers lazily.
func Keyed(p KeyedParams, ks []contender.Keyed, prog Progress) ([]KeyedRow, []string) {
	var rows []KeyedRow
	var notes []string
	for _, k := range ks {
		r, n := KeyedOne(p, k, prog)
		rows, notes = append(rows, r...), append(notes, n...)
	}
	return rows, notes
}

// KeyedOne runs the keyed scenario on one keyed set, at each N.
func KeyedOne(p KeyedParams, k contender.Keyed, prog Progress) ([]KeyedRow, []string) {
	var rows []KeyedRow
	var notes []string
	for _, n := range p.Keys {
		r, err := keyedOne(p, k, n, prog)
		if err != nil {
			notes = append(notes, fmt.Sprintf("keyed: %s, N=%d: %v", k.Name, n, err))
			continue
		}
		for _, row := range r {
			if row.Errors > 0 {
				notes = append(notes, fmt.Sprintf("keyed: %s, N=%d, %d goroutine(s): %d Set errors",
					k.Name, n, row.Goroutines, row.Errors))
			}
		}
		rows = append(rows, r...)
	}
	return rows, notes
}

// keyedOne fills one set with n live keys and measures it at each
// goroutine count. The set is filled p.Runs times over, a fresh one each
// time, for the spread of the setup; the runs measure the last.
func keyedOne(p KeyedParams, k contender.Keyed, n int, prog Progress) ([]KeyedRow, error) {
	fills := max(p.Runs, 1)
	if n == 0 {
		fills = 1 // nothing to time
	}
	var (
		set         contender.KeyedSet
		took        []float64
		bytesPerKey float64
	)
	for i := range fills {
		status(prog, "keyed: %s, setting %d live keys, fill %d/%d", k.Name, n, i+1, fills)
		s, perKey, setup, err := FillKeyed(k, p.Config, n, p.LiveDelay, p.LiveSpread, p.Settle)
		if err != nil {
			return nil, err
		}
		took = append(took, float64(setup))
		if i == 0 {
			bytesPerKey = perKey
		}
		if i < fills-1 {
			s.Close()
			continue
		}
		set = s
	}
	defer set.Close()
	var setup Stat
	if n > 0 {
		setup = statOf(took)
	}
	var rows []KeyedRow
	for _, g := range goroutineCounts() {
		m := medianPerOp(p.Runs, func(r int) (delta, int64, int64) {
			status(prog, "keyed: %s, N=%d, %d goroutine(s), run %d/%d", k.Name, n, g, r+1, p.Runs)
			return keyedRun(set, n, g, p.Delay, p.Window)
		})
		rows = append(rows, KeyedRow{Contender: k.Name, Keys: n, Goroutines: g,
			NsPerOp: m.ns, CPUNsPerOp: m.cpu, BytesPerOp: m.bytes, AllocsPerOp: m.allocs,
			BytesPerKey: bytesPerKey, Setup: setup, Errors: m.errors})
	}
	return rows, nil
}

// FillKeyed returns a new set of k holding n live keys, 0 to n-1, their
// deadlines spread over [base, base+spread), all with one value, and the
// growth of the live heap per key, measured settle after the last Set, and
// the time the Sets took. A key's expiry is a failure the caller would not
// see, so the live keys' deadlines must lie beyond the measurement.
func FillKeyed(k contender.Keyed, cfg contender.Config, n int, base, spread, settle time.Duration) (contender.KeyedSet, float64, time.Duration, error) {
	set, err := k.New(cfg, func(uint64, *contender.Item) {})
	if err != nil {
		return nil, 0, 0, err
	}
	before := heapAlloc()
	start := time.Now()
	for i := range n {
		if err := set.Set(uint64(i), sharedItem, base+spread*time.Duration(i)/time.Duration(n)); err != nil {
			set.Close()
			return nil, 0, 0, fmt.Errorf("setting %d live keys: %w", n, err)
		}
	}
	setup := time.Since(start)
	if n == 0 {
		return set, 0, setup, nil
	}
	time.Sleep(settle)
	return set, float64(heapAlloc()-before) / float64(n), setup, nil
}

// keyedRun runs set+move+remove operations on the given number of
// goroutines for window, each on new keys of its own above the n live
// ones, and returns the process-wide deltas, the operations done and the
// Sets that failed.
func keyedRun(set contender.KeyedSet, n, goroutines int, delay, window time.Duration) (delta, int64, int64) {
	runtime.GC()
	var (
		stop        atomic.Bool
		total, errs atomic.Int64
		wg          sync.WaitGroup
	)
	start := takeSample(true)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := uint64(n) + uint64(g)<<40 + keyedRunSeq.Add(1)<<24
			var done, e int64
			for !stop.Load() {
				for range 64 {
					key++
					if SetMoveRemove(set, key, delay) != nil {
						e++
						continue
					}
					done++
				}
			}
			total.Add(done)
			errs.Add(e)
		}()
	}
	time.Sleep(window)
	stop.Store(true)
	wg.Wait()
	return takeSample(true).since(start), total.Load(), errs.Load()
}

// keyedRunSeq keeps the keys of each run apart from the last run's.
var keyedRunSeq atomic.Uint64

// SetMoveRemove is the keyed scenario's operation: a new key set with
// delay, its deadline moved to delay from now, and the key removed.
func SetMoveRemove(set contender.KeyedSet, key uint64, delay time.Duration) error {
	if err := set.Set(key, sharedItem, delay); err != nil {
		return err
	}
	set.Move(key, delay)
	set.Remove(key)
	return nil
}
