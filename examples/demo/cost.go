package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// The cost of one operation is measured as `make bench-core` measures it:
// the wheel and the runtime's equivalent run the same number of operations
// one block after the other, in the same process, after a collection, and
// each round gives a ratio. A single block on a shared machine can be slowed
// by anything (the collector, the wheel's worker, another process), so the
// demo runs several rounds, alternating which side goes first, and reports
// the median with the fastest and slowest round.

// costDelay is long enough that no measured timeout ever fires.
const costDelay = time.Hour

// voidSpread is how far apart one side's fastest and slowest rounds may be
// before the comparison is void: beyond it, something other than the timer
// (another process, the collector, a starved core) decided the figures. On
// a shared 2-core VM the runtime's own figure moves by up to 2x between
// runs, so 3x leaves room for that and still catches a side that collapsed.
const voidSpread = 3.0

// costCase is one operation measured on the wheel and on the runtime.
type costCase struct {
	name     string    // what one operation is
	baseline string    // the runtime's equivalent
	ops      int       // operations per block
	wheel    func(int) // runs n operations on the wheel
	runtime  func(int) // runs n of the runtime's equivalent
}

// spread is the median, fastest and slowest of a set of rounds.
type spread struct{ median, min, max float64 }

// summarize returns xs's spread; xs must not be empty.
func summarize(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := s[len(s)/2]
	if len(s)%2 == 0 {
		mid = (s[len(s)/2-1] + mid) / 2
	}
	return spread{median: mid, min: s[0], max: s[len(s)-1]}
}

// costResult is what the rounds of one case measured, in ns per operation.
type costResult struct {
	costCase
	wheelNs, runtimeNs, ratios []float64 // one per round
}

// void returns why the rounds cannot be compared, or "" if they can: one
// side's slowest round more than voidSpread times its fastest.
func (r costResult) void() string {
	for _, side := range []struct {
		name string
		ns   []float64
	}{{"hashedwheel", r.wheelNs}, {r.baseline, r.runtimeNs}} {
		s := summarize(side.ns)
		if s.max > voidSpread*s.min {
			return fmt.Sprintf("%s: %s's rounds took %.0f to %.0f ns, more than %gx apart",
				r.name, side.name, s.min, s.max, voidSpread)
		}
	}
	return ""
}

// costCases returns the operations the README compares with the runtime's:
// schedule + cancel on one goroutine and on every processor, and a request
// context made on parent, cancellable as a server's request context is,
// and cancelled. A block of each takes a few tens of milliseconds.
func costCases(timer *hashedwheel.HashedWheelTimer, parent context.Context, ops int) []costCase {
	noop := func() {}
	procs := runtime.GOMAXPROCS(0)
	return []costCase{{
		name:     "schedule + cancel",
		baseline: "time.AfterFunc + Stop",
		ops:      ops,
		wheel: func(n int) {
			for range n {
				if t, err := timer.AfterFunc(costDelay, noop); err == nil {
					t.Cancel()
				}
			}
		},
		runtime: func(n int) {
			for range n {
				time.AfterFunc(costDelay, noop).Stop()
			}
		},
	}, {
		name:     fmt.Sprintf("the same on %d goroutine%s", procs, plural(procs)),
		baseline: "time.AfterFunc + Stop",
		ops:      ops,
		wheel: onEvery(procs, func(n int) {
			for range n {
				if t, err := timer.AfterFunc(costDelay, noop); err == nil {
					t.Cancel()
				}
			}
		}),
		runtime: onEvery(procs, func(n int) {
			for range n {
				time.AfterFunc(costDelay, noop).Stop()
			}
		}),
	}, {
		name:     "request context + cancel",
		baseline: "context.WithTimeout",
		ops:      max(ops/4, 1),
		wheel: func(n int) {
			for range n {
				_, cancel := timer.WithTimeout(parent, costDelay)
				cancel()
			}
		},
		runtime: func(n int) {
			for range n {
				_, cancel := context.WithTimeout(parent, costDelay)
				cancel()
			}
		},
	}}
}

// plural returns "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// onEvery returns a function that runs f on procs goroutines at once,
// sharing n operations between them.
func onEvery(procs int, f func(n int)) func(int) {
	return func(n int) {
		var wg sync.WaitGroup
		for k := range procs {
			wg.Go(func() { f(n*(k+1)/procs - n*k/procs) })
		}
		wg.Wait()
	}
}

// measureCost runs rounds rounds of c, after one block of each side that is
// not counted, so that neither pays alone for growing the heap.
func measureCost(c costCase, rounds int) costResult {
	r := costResult{costCase: c}
	timeBlock(c.wheel, c.ops)
	timeBlock(c.runtime, c.ops)
	for i := range rounds {
		var w, b float64
		if i%2 == 0 {
			w, b = timeBlock(c.wheel, c.ops), timeBlock(c.runtime, c.ops)
		} else {
			b, w = timeBlock(c.runtime, c.ops), timeBlock(c.wheel, c.ops)
		}
		r.wheelNs = append(r.wheelNs, w)
		r.runtimeNs = append(r.runtimeNs, b)
		r.ratios = append(r.ratios, w/b)
	}
	return r
}

// timeBlock returns the ns per operation of f(n), started after a
// collection so that no block pays for the garbage of the one before.
func timeBlock(f func(int), n int) float64 {
	runtime.GC()
	start := time.Now()
	f(n)
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// measureCosts measures every case on timer, rounds rounds each, with ops
// operations per block of schedule + cancel.
func measureCosts(timer *hashedwheel.HashedWheelTimer, rounds, ops int) []costResult {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	var rs []costResult
	for _, c := range costCases(timer, parent, ops) {
		rs = append(rs, measureCost(c, rounds))
	}
	return rs
}

// printCost prints one row per case: the median ns per operation of each
// side with the fastest and slowest round, and the median ratio with its
// range, or void, with the reason below the table.
func printCost(out io.Writer, rs []costResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(out, "Cost per operation, measured as `make bench-core` does: the wheel and the\n"+
		"runtime's equivalent (time.AfterFunc + Stop; for a context, context.WithTimeout)\n"+
		"alternate in %d rounds of %s operations each (%s of a context), in this\n"+
		"process. Median (fastest-slowest round); ratio < 1: the wheel is cheaper.\n\n",
		len(rs[0].ratios), commas(int64(rs[0].ops)), commas(int64(rs[len(rs)-1].ops)))
	fmt.Fprintf(out, "%-24s %16s %16s %17s\n", "", "hashedwheel, ns", "runtime, ns", "ratio")
	var voids []string
	for _, r := range rs {
		ratio := "void"
		if why := r.void(); why != "" {
			voids = append(voids, why)
		} else {
			ratio = fmtSpread(summarize(r.ratios), "%.2f")
		}
		fmt.Fprintf(out, "%-24s %16s %16s %17s\n", r.name,
			fmtSpread(summarize(r.wheelNs), "%.0f"), fmtSpread(summarize(r.runtimeNs), "%.0f"), ratio)
	}
	for _, why := range voids {
		fmt.Fprintf(out, "void: %s;\nthe machine was too busy for them to be compared.\n", why)
	}
}

// fmtSpread formats s as "median (min-max)", each number in format.
func fmtSpread(s spread, format string) string {
	return fmt.Sprintf(format+" ("+format+"-"+format+")", s.median, s.min, s.max)
}
