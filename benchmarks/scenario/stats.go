package scenario

import (
	"math"
	"slices"
)

// Stat is one figure over several runs: the median of the runs, and the
// least and the most of them, which show how far a single run strays.
// A figure over no run has a NaN median and Runs 0.
type Stat struct {
	Median, Min, Max float64
	Runs             int
}

// statOf returns the Stat of xs, one value per run. It does not modify xs.
func statOf(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	return Stat{Median: median(xs), Min: slices.Min(xs), Max: slices.Max(xs), Runs: len(xs)}
}

// Scale returns s with every figure multiplied by f, which must not be
// negative: the same runs in another unit.
func (s Stat) Scale(f float64) Stat {
	s.Median, s.Min, s.Max = s.Median*f, s.Min*f, s.Max*f
	return s
}

// Less returns s with x taken from every figure: the same runs less a
// correction that does not vary between them.
func (s Stat) Less(x float64) Stat {
	s.Median, s.Min, s.Max = s.Median-x, s.Min-x, s.Max-x
	return s
}

// median returns the median of xs, NaN for none. It does not modify xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quantile returns the q-quantile (0..1) of sorted, by the nearest-rank
// method, so that it is always one of the samples.
func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
