package report

import (
	"fmt"
	"strings"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

const keyedBase = contender.KeyedBaseline

func keyedRow(r *Results, name string, n, g int) *scenario.KeyedRow {
	return find(r.Keyed, func(x *scenario.KeyedRow) bool {
		return x.Contender == name && x.Keys == n && x.Goroutines == g
	})
}

func keyedSection(b *strings.Builder, r *Results) {
	p := r.KeyedParams
	b.WriteString("## 10. Keyed timers: one deadline per key\n\n")
	fmt.Fprintf(b, "The session or connection timeout found by its key. Each operation sets a new key with a "+
		"pointer value and a deadline %v away, moves the deadline to %v from now, and removes the key: go-zero's "+
		"SetTimer, MoveTimer and RemoveTimer. N keys are live besides, due %v to %v away, so that none expires. "+
		"Ratios are to `%s`, what users write by hand, at the same N and goroutine count. With %d goroutines each "+
		"works on keys of its own, and ns/op is aggregate wall time per operation. *Heap / live key* is the growth "+
		"of the live heap over the N live keys, which share one value, at the first fill. *Setup* is the time to set "+
		"the N live keys, over %d fills of a fresh set; the runs measure the last. Each keyed set runs in a fresh "+
		"process. Wheels: tick %v × %d. %v per run, median of %d runs.\n\n",
		p.Delay, p.Delay, p.LiveDelay, p.LiveDelay+p.LiveSpread, keyedBase, r.Machine.GOMAXPROCS,
		p.Runs, p.Config.Tick, p.Config.WheelSize, p.Window, p.Runs)
	var sets [][]string
	for _, k := range r.KeyedSets {
		sets = append(sets, []string{"`" + k.Name + "`", k.Note})
	}
	table(b, []string{"keyed set", "what"}, sets)
	var rows [][]string
	for _, n := range p.Keys {
		for _, g := range goroutineCounts(r) {
			a := keyedRow(r, keyedBase, n, g)
			for _, k := range r.KeyedSets {
				x := keyedRow(r, k.Name, n, g)
				if x == nil || a == nil {
					continue
				}
				perKey := "—"
				if n > 0 {
					perKey = fmt.Sprintf("%.0f B %s", x.BytesPerKey, ratio(x.BytesPerKey, a.BytesPerKey))
				}
				rows = append(rows, []string{count(n), "`" + k.Name + "`", fmt.Sprint(g),
					nsSpreadRatio(x.NsPerOp, a.NsPerOp), nsSpreadRatio(x.CPUNsPerOp, a.CPUNsPerOp),
					fmt.Sprintf("%.0f", x.BytesPerOp), fmt.Sprintf("%.2f", x.AllocsPerOp), perKey,
					setup(n, x.Setup, a.Setup)})
			}
		}
	}
	table(b, []string{"N", "keyed set", "goroutines", "ns/op", "CPU ns/op", "B/op", "allocs/op", "heap / live key", "setup"}, rows)
}
