// Command report runs the benchmark matrix on every contender and writes
// benchmarks.md and its charts into -out.
//
//	go run ./cmd/report -out ../docs     # make bench: under ten minutes
//	go run ./cmd/report -quick -out DIR  # make bench-quick: about a minute
//	go run ./cmd/report -long -out DIR   # adds N = 10M pending timeouts
//	go run ./cmd/report -scenarios scaling -out DIR  # one scenario alone
//
// -only narrows the contenders, and the keyed sets of the keyed scenario,
// and -scenarios the scenarios. A report
// narrowed to some scenarios holds only their sections and charts, so that
// one scenario measured on another machine (the scaling scenario on a
// many-core one) makes a report of its own.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/benchmarks/report"
	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

func main() {
	out := flag.String("out", "../docs", "directory for benchmarks.md and the charts")
	quick := flag.Bool("quick", false, "run the reduced matrix (about a minute)")
	long := flag.Bool("long", false, "also measure churn with 10M timeouts pending")
	only := flag.String("only", "", "comma-separated contenders to run (time.AfterFunc is always included)")
	scenarios := flag.String("scenarios", "", "comma-separated subset of: "+strings.Join(scenarioNames, ","))
	format := flag.String("format", "svg", "chart format: svg or png")
	childMem := flag.String("child-memory", "", "internal: measure the memory scenario for one contender and print it as JSON")
	childProcs := flag.Int("child-scaling", 0, "internal: measure the scaling scenario at this GOMAXPROCS and print it as JSON")
	childKeyedSet := flag.String("child-keyed", "", "internal: measure the keyed scenario for one keyed set and print it as JSON")
	flag.Parse()
	if *childMem != "" || *childProcs > 0 || *childKeyedSet != "" {
		p := fullPlan(*long)
		if *quick {
			p = quickPlan()
		}
		var err error
		switch {
		case *childMem != "":
			err = childMemory(*childMem, p.memory)
		case *childKeyedSet != "":
			err = childKeyed(*childKeyedSet, p.keyed)
		default:
			err = childScaling(*childProcs, *only, p.scaling)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		return
	}
	if *format != "svg" && *format != "png" {
		fmt.Fprintln(os.Stderr, "report: -format must be svg or png")
		os.Exit(2)
	}
	if err := run(*out, *quick, *long, *only, *scenarios, *format); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(out string, quick, long bool, only, subset, format string) error {
	if quick && long {
		return fmt.Errorf("-quick and -long exclude each other")
	}
	cs, err := contender.Select(only)
	if err != nil {
		return err
	}
	ks := contender.SelectKeyed(only)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	p, mode := fullPlan(long), "full"
	var modeFlags []string // what a child process needs to pick the same plan
	switch {
	case quick:
		p, mode, modeFlags = quickPlan(), "quick", []string{"-quick"}
	case long:
		mode, modeFlags = "long", []string{"-long"}
	}
	res := &report.Results{
		Machine: report.ReadMachine(), Mode: mode, Runs: p.runs, ChartFormat: format, Contenders: cs,
		ChurnParams: p.churn, RatioParams: p.ratio, StormParams: p.storm,
		LatenessParams: p.lateness, MemoryParams: p.memory, IdleParams: p.idle,
		RearmParams: p.rearm, ScalingParams: p.scaling, KeyedSets: ks, KeyedParams: p.keyed,
	}
	steps := []struct {
		name string
		run  func(scenario.Progress) []string
	}{
		{"churn", func(pr scenario.Progress) (n []string) { res.Churn, n = scenario.Churn(p.churn, cs, pr); return }},
		{"ratio", func(pr scenario.Progress) (n []string) { res.Ratio, n = scenario.Ratio(p.ratio, cs, pr); return }},
		{"storm", func(pr scenario.Progress) (n []string) { res.Storm, n = scenario.Storm(p.storm, cs, pr); return }},
		// Memory runs before lateness, whose samples the results keep: the
		// churn's GC cycles depend on the live heap of the whole process,
		// which should hold as little of the harness's as possible.
		{"memory", func(pr scenario.Progress) (n []string) {
			res.Memory, n = memoryInChildren(p.memory, cs, modeFlags, pr)
			return
		}},
		{"lateness", func(pr scenario.Progress) (n []string) {
			res.Lateness, n = scenario.Lateness(p.lateness, cs, pr)
			return
		}},
		{"idle", func(pr scenario.Progress) (n []string) {
			res.Idle, res.IdleBaseline, n = scenario.Idle(p.idle, cs, pr)
			return
		}},
		{"rearm", func(pr scenario.Progress) (n []string) { res.Rearm, n = scenario.Rearm(p.rearm, cs, pr); return }},
		{"scaling", func(pr scenario.Progress) (n []string) {
			res.Scaling, n = scalingInChildren(p.scaling, cs, modeFlags, pr)
			return
		}},
		{"keyed", func(pr scenario.Progress) (n []string) {
			res.Keyed, n = keyedInChildren(p.keyed, ks, modeFlags, pr)
			return
		}},
	}
	want, err := selectScenarios(subset)
	if err != nil {
		return err
	}

	start := time.Now()
	line := report.NewLine(os.Stderr)
	var run []string
	for _, s := range steps {
		if want[s.name] {
			run = append(run, s.name)
		}
	}
	res.Scenarios = run
	for _, s := range steps {
		if !want[s.name] {
			continue
		}
		line.Scenario(len(res.Durations)+1, len(run), s.name)
		began := time.Now()
		res.Notes = append(res.Notes, s.run(line)...)
		res.Durations = append(res.Durations, report.Duration{Name: s.name, Took: time.Since(began)})
	}
	res.Took = time.Since(start)
	res.Logs = contender.Logs()

	path := filepath.Join(out, "benchmarks.md")
	if err := os.WriteFile(path, []byte(report.Markdown(res)), 0o644); err != nil {
		return err
	}
	charts, err := report.WriteCharts(res, out)
	if err != nil {
		return err
	}
	line.Done(fmt.Sprintf("%s matrix done in %v: wrote %s and %d charts", mode, res.Took.Round(time.Second), path, charts))
	return nil
}

// scenarioNames are the scenarios in the order a run measures them.
var scenarioNames = report.ScenarioNames

// selectScenarios returns the scenarios named in the comma-separated list;
// an empty list selects all of them.
func selectScenarios(list string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(scenarioNames, s) {
			return nil, fmt.Errorf("unknown scenario %q; want some of %s", s, strings.Join(scenarioNames, ","))
		}
		want[s] = true
	}
	if len(want) == 0 {
		for _, s := range scenarioNames {
			want[s] = true
		}
	}
	return want, nil
}
