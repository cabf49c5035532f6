// Package histogram counts durations in log-spaced buckets, those of a
// Prometheus native histogram of schema 2: bucket i of the native
// histogram holds the durations in (2^((i-1)/4), 2^(i/4)] seconds, four
// to each doubling, about 19% wide. Slot 0 is the zero bucket, durations
// up to 2^-20 s (about 953.7ns); slots 1 to Len-2 are native buckets
// -79 to 24, the last bounded by 2^6 s = 64 s; slot Len-1 holds the
// durations beyond.
//
// A Local is one goroutine's: it counts with plain writes, and merges
// into a Shared, which readers snapshot; so recording writes nothing
// another goroutine reads until the merge.
package histogram

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Len is the number of slots.
const Len = 1 + 104 + 1

// Schema is the native histogram schema of the buckets, and
// FirstIndex the native index of slot 1.
const (
	Schema     = 2
	FirstIndex = -79
)

// ZeroThreshold is the upper bound of slot 0, in seconds: 2^-20.
const ZeroThreshold = 1.0 / (1 << 20)

// upper holds each slot's upper bound in nanoseconds, rounded down; the
// last slot's is math.MaxInt64. A duration goes in the first slot whose
// bound is at least it.
var upper [Len]int64

// firstOfLen[l] is the first slot whose upper bound is at least the
// smallest duration of l bits, 2^(l-1) ns.
var firstOfLen [65]int

func init() {
	upper[0] = int64(math.Exp2(-20) * 1e9)
	for s := 1; s < Len-1; s++ {
		upper[s] = int64(math.Exp2(float64(s-1+FirstIndex)/4) * 1e9)
	}
	upper[Len-1] = math.MaxInt64
	s := 0
	for l := 1; l <= 64; l++ {
		least := uint64(1) << (l - 1)
		for s < Len-1 && uint64(upper[s]) < least {
			s++
		}
		firstOfLen[l] = s
	}
}

// Upper returns the upper bound of slot s in nanoseconds: math.MaxInt64
// for the last.
func Upper(s int) int64 { return upper[s] }

// Snapshot is a reading of a histogram.
type Snapshot struct {
	Counts [Len]uint64
	Sum    int64 // of the durations, in nanoseconds
	Max    int64 // the longest duration
}

// Count returns the number of durations counted.
func (s Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the slot that holds the q-quantile,
// 0 ≤ q ≤ 1, no more than Max: within a slot's width (19%) above the
// true quantile. It returns 0 for an empty snapshot.
func (s Snapshot) Quantile(q float64) int64 {
	n := s.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(n)))
	var seen uint64
	for i, c := range s.Counts {
		if seen += c; seen >= max(rank, 1) {
			return min(upper[i], s.Max)
		}
	}
	return s.Max
}

// Local is a histogram that one goroutine writes.
type Local struct {
	counts [Len]uint64
	sum    int64
	max    int64
	lo, hi int // the slots written since the last merge: [lo, hi)
}

// Add counts k durations of ns nanoseconds; one not positive counts as 0.
func (l *Local) Add(ns int64, k uint64) {
	ns = max(ns, 0)
	s := 0 // the first slot whose upper bound is at least ns
	if ns > upper[0] {
		// At most four steps: a doubling spans four slots.
		for s = firstOfLen[bits.Len64(uint64(ns))]; ns > upper[s]; s++ {
		}
	}
	if l.hi == 0 {
		l.lo, l.hi = s, s+1
	} else {
		l.lo, l.hi = min(l.lo, s), max(l.hi, s+1)
	}
	l.counts[s] += k
	l.sum += ns * int64(k)
	l.max = max(l.max, ns)
}

// MergeInto adds the local counts into sh and empties l.
func (l *Local) MergeInto(sh *Shared) {
	if l.hi == 0 {
		return
	}
	for s := l.lo; s < l.hi; s++ {
		if c := l.counts[s]; c > 0 {
			sh.counts[s].Add(c)
			l.counts[s] = 0
		}
	}
	sh.sum.Add(l.sum)
	for m := sh.max.Load(); l.max > m && !sh.max.CompareAndSwap(m, l.max); m = sh.max.Load() {
	}
	l.sum, l.max, l.lo, l.hi = 0, 0, 0, 0
}

// Shared is a histogram that Locals merge into, from any goroutine.
type Shared struct {
	counts [Len]atomic.Uint64
	sum    atomic.Int64
	max    atomic.Int64
}

// Snapshot reads the histogram; counts merged meanwhile may be read in
// part.
func (sh *Shared) Snapshot() Snapshot {
	var s Snapshot
	for i := range sh.counts {
		s.Counts[i] = sh.counts[i].Load()
	}
	s.Sum, s.Max = sh.sum.Load(), sh.max.Load()
	return s
}
