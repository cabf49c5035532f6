package report

import (
	"fmt"
	"strings"

	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

func rearmRow(r *Results, name string, n, g int) *scenario.RearmRow {
	return find(r.Rearm, func(x *scenario.RearmRow) bool {
		return x.Contender == name && x.Connections == n && x.Goroutines == g
	})
}

func rearmSection(b *strings.Builder, r *Results) {
	p := r.RearmParams
	b.WriteString("## 8. Re-arming: the idle-connection deadline\n\n")
	fmt.Fprintf(b, "N connections each hold one timeout %v away, and every message on a connection pushes it back "+
		"to %v from now, as an idle or heartbeat deadline is; none fires. Messages land on the connections in a "+
		"scattered order. Each contender re-arms with its own call: `Timeout.Reset` for hashedwheel, hierarchical "+
		"and minheap (where Reset refuses, Cancel and a new timeout: *rescheduled* is the share of re-arms that "+
		"took that path); `time.Timer.Reset` on one `time.AfterFunc` timer per connection, the row of `%s`, which "+
		"every ratio is to; go-zero's `MoveTimer`. Wheels: tick %v × %d. %v per run, median of %d runs. With %d "+
		"goroutines each re-arms its own share of the connections, and ns/op is aggregate wall time per re-arm. "+
		"Setup is the time to open the N connections' timeouts, over %d fills of a fresh timer; the runs measure "+
		"the last.\n\n",
		p.Delay, p.Delay, base, p.Config.Tick, p.Config.WheelSize, p.Window, p.Runs, r.Machine.GOMAXPROCS, p.Runs)
	fmt.Fprintf(b, "![re-arm cost against the number of connections](%s)\n\n", chart(r, ChartRearm))
	var rows [][]string
	for _, n := range p.Connections {
		for _, g := range goroutineCounts(r) {
			a := rearmRow(r, base, n, g)
			for _, c := range r.Contenders {
				x := rearmRow(r, c.Name, n, g)
				if x == nil || a == nil {
					continue
				}
				rows = append(rows, []string{count(n), "`" + c.Name + "`", fmt.Sprint(g),
					nsSpreadRatio(x.NsPerOp, a.NsPerOp), nsSpreadRatio(x.CPUNsPerOp, a.CPUNsPerOp),
					fmt.Sprintf("%.0f", x.BytesPerOp), fmt.Sprintf("%.2f", x.AllocsPerOp),
					fmt.Sprintf("%.0f%%", 100*x.Rescheduled), setup(n, x.Setup, a.Setup)})
			}
		}
	}
	table(b, []string{"N", "contender", "goroutines", "ns/op", "CPU ns/op", "B/op", "allocs/op", "rescheduled", "setup"}, rows)
}

// goroutineCounts are the goroutine counts the per-operation scenarios run
// at: one, and GOMAXPROCS unless that is one too.
func goroutineCounts(r *Results) []int {
	if r.Machine.GOMAXPROCS <= 1 {
		return []int{1}
	}
	return []int{1, r.Machine.GOMAXPROCS}
}
