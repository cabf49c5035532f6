package report

import (
	"fmt"
	"strings"

	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

func scalingRow(r *Results, name string, procs int) *scenario.ScalingRow {
	return find(r.Scaling, func(x *scenario.ScalingRow) bool { return x.Contender == name && x.Procs == procs })
}

func scalingSection(b *strings.Builder, r *Results) {
	p := r.ScalingParams
	m := r.Machine
	b.WriteString("## 9. Scaling with GOMAXPROCS\n\n")
	b.WriteString(m.Sentence() + "\n\n")
	fmt.Fprintf(b, "Schedule + cancel as in section 1 (a timeout %v away, cancelled at once, nothing else pending) "+
		"on as many goroutines as GOMAXPROCS, at GOMAXPROCS %s, each value in a fresh process started with it. "+
		"ns/op is aggregate wall time per pair over all goroutines: a timer whose callers scale sees it fall as "+
		"GOMAXPROCS grows, while one serialised on a lock or a goroutine sees it stay flat or rise. Beyond %d "+
		"(the machine's CPUs) goroutines share CPUs and the figures say nothing more about scaling. Ratios are "+
		"to `%s` at the same GOMAXPROCS. Wheels: tick %v × %d. %v per run, median of %d runs.\n\n",
		p.Delay, joinInts(p.Procs), m.NumCPU, base, p.Config.Tick, p.Config.WheelSize, p.Window, p.Runs)
	fmt.Fprintf(b, "![schedule+cancel cost against GOMAXPROCS](%s)\n\n", chart(r, ChartScaling))
	header := []string{"contender"}
	for _, procs := range p.Procs {
		header = append(header, fmt.Sprintf("GOMAXPROCS %d", procs))
	}
	for _, metric := range []struct {
		title string
		get   func(*scenario.ScalingRow) scenario.Stat
	}{
		{"Wall time per schedule+cancel pair (aggregate):", func(x *scenario.ScalingRow) scenario.Stat { return x.NsPerOp }},
		{"Process CPU time per pair:", func(x *scenario.ScalingRow) scenario.Stat { return x.CPUNsPerOp }},
	} {
		var rows [][]string
		for _, c := range r.Contenders {
			row := []string{"`" + c.Name + "`"}
			measured := false
			for _, procs := range p.Procs {
				x, a := scalingRow(r, c.Name, procs), scalingRow(r, base, procs)
				if x == nil || a == nil {
					row = append(row, "n/a")
					continue
				}
				row, measured = append(row, nsSpreadRatio(metric.get(x), metric.get(a))), true
			}
			if measured {
				rows = append(rows, row)
			}
		}
		b.WriteString(metric.title + "\n\n")
		table(b, header, rows)
	}
}

// joinInts formats 1, 2, 4 as "1, 2, 4".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
