package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	assert.Equal(t, spread{median: 3, min: 1, max: 9}, summarize([]float64{9, 1, 3}))
	assert.Equal(t, spread{median: 2.5, min: 1, max: 4}, summarize([]float64{4, 1, 2, 3}))
	assert.Equal(t, spread{median: 5, min: 5, max: 5}, summarize([]float64{5}))
}

// TestMeasureCostAlternates checks that every round runs both sides on the
// same number of operations, alternating which goes first, after one
// uncounted block of each.
func TestMeasureCostAlternates(t *testing.T) {
	var order []string
	c := costCase{
		name: "op", baseline: "base", ops: 100,
		wheel:   func(n int) { assert.Equal(t, 100, n); order = append(order, "w") },
		runtime: func(n int) { assert.Equal(t, 100, n); order = append(order, "r") },
	}
	r := measureCost(c, 4)
	assert.Equal(t, strings.Split("w r w r r w w r r w", " "), order)
	require.Len(t, r.wheelNs, 4)
	require.Len(t, r.runtimeNs, 4)
	require.Len(t, r.ratios, 4)
	for i := range r.ratios {
		assert.InDelta(t, r.wheelNs[i]/r.runtimeNs[i], r.ratios[i], 1e-9)
	}
}

// collapsed is a comparison in which the runtime's side fell to a fortieth
// of its speed in two rounds, as it did on a machine busy with other work.
func collapsed() costResult {
	return costResult{
		costCase:  costCase{name: "schedule + cancel", baseline: "time.AfterFunc + Stop", ops: 1000},
		wheelNs:   []float64{64, 66, 65, 63, 70},
		runtimeNs: []float64{150, 6000, 155, 6100, 149},
		ratios:    []float64{64.0 / 150, 66.0 / 6000, 65.0 / 155, 63.0 / 6100, 70.0 / 149},
	}
}

func TestCostVoidWhenASideCollapsed(t *testing.T) {
	why := collapsed().void()
	assert.Contains(t, why, "time.AfterFunc + Stop's rounds took 149 to 6100 ns")

	steady := collapsed()
	steady.runtimeNs = []float64{150, 230, 155, 160, 149} // the usual noise of a shared VM
	assert.Empty(t, steady.void())

	wheelSlow := collapsed()
	wheelSlow.runtimeNs = steady.runtimeNs
	wheelSlow.wheelNs = []float64{64, 900, 65, 63, 70}
	assert.Contains(t, wheelSlow.void(), "hashedwheel's rounds took 63 to 900 ns")
}

func TestPrintCostShowsVoidInsteadOfRatio(t *testing.T) {
	steady := collapsed()
	steady.name = "request context + cancel"
	steady.runtimeNs = []float64{150, 160, 155, 158, 149}
	steady.ratios = []float64{0.43, 0.41, 0.42, 0.40, 0.47}
	var out bytes.Buffer
	printCost(&out, []costResult{collapsed(), steady})
	got := out.String()

	assert.Contains(t, got, "5 rounds of 1,000 operations each")
	row := lineWith(got, "schedule + cancel ")
	assert.Contains(t, row, "void")
	assert.Contains(t, row, "155 (149-6100)")
	assert.NotContains(t, row, "0.")
	assert.Contains(t, got, "void: schedule + cancel: time.AfterFunc + Stop's rounds")
	assert.Contains(t, lineWith(got, "request context + cancel"), "0.42 (0.40-0.47)")
}
