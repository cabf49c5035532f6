package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

// The memory scenario measures the live heap and the collector, which
// whatever ran before in the process disturbs: the runtime frees stopped
// timers lazily, and a million of them from an earlier measurement would
// stay live for a while. So each contender's memory figures come from a
// fresh process: this same binary, started with -child-memory.

// childMemory measures scenario 6 for the named contender in this process
// and writes the row to stdout as JSON.
func childMemory(name string, p scenario.MemoryParams) error {
	cs, err := contender.Select(name)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Name != name {
			continue
		}
		row, err := scenario.MemoryOne(p, c, nil)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(row)
	}
	return fmt.Errorf("no contender %q", name)
}

// memoryInChildren runs scenario 6 for each contender in a child process.
func memoryInChildren(p scenario.MemoryParams, cs []contender.Contender, modeFlags []string, prog scenario.Progress) ([]scenario.MemoryRow, []string) {
	self, err := os.Executable()
	if err != nil {
		return nil, []string{fmt.Sprintf("memory: cannot find this program to run each contender apart (%v); measured in-process instead", err)}
	}
	var rows []scenario.MemoryRow
	var notes []string
	for _, c := range cs {
		prog.Status(fmt.Sprintf("memory: %s, in a fresh process: churn, then %d pending", c.Name, p.Pending))
		cmd := exec.Command(self, append(modeFlags, "-child-memory", c.Name)...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			notes = append(notes, fmt.Sprintf("memory: %s: child process: %v", c.Name, err))
			continue
		}
		var row scenario.MemoryRow
		if err := json.Unmarshal(out, &row); err != nil {
			notes = append(notes, fmt.Sprintf("memory: %s: child output: %v", c.Name, err))
			continue
		}
		notes = append(notes, row.Notes(p)...)
		rows = append(rows, row)
	}
	return rows, notes
}

// The scaling scenario runs each GOMAXPROCS in a fresh process too: this
// binary, started with -child-scaling N and GOMAXPROCS=N in its
// environment, so that the runtime starts with N Ps and no value inherits
// the heap or the idle Ps of another.

// scalingResult is what a scaling child writes to stdout.
type scalingResult struct {
	Rows  []scenario.ScalingRow
	Notes []string
}

// childScaling measures the scaling scenario for the contenders in only at
// GOMAXPROCS procs, in this process, and writes the rows to stdout as JSON.
func childScaling(procs int, only string, p scenario.ScalingParams) error {
	cs, err := contender.Select(only)
	if err != nil {
		return err
	}
	// The environment already says so; importing go-zero runs automaxprocs,
	// which leaves an explicit GOMAXPROCS alone, but set it regardless.
	runtime.GOMAXPROCS(procs)
	var res scalingResult
	res.Rows, res.Notes = scenario.ScalingAt(p, cs, nil)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// scalingInChildren runs the scaling scenario in one child process per
// GOMAXPROCS value.
func scalingInChildren(p scenario.ScalingParams, cs []contender.Contender, modeFlags []string, prog scenario.Progress) ([]scenario.ScalingRow, []string) {
	self, err := os.Executable()
	if err != nil {
		return nil, []string{fmt.Sprintf("scaling: cannot find this program to run each GOMAXPROCS apart (%v); not measured", err)}
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	var rows []scenario.ScalingRow
	var notes []string
	for _, procs := range p.Procs {
		prog.Status(fmt.Sprintf("scaling: GOMAXPROCS=%d, in a fresh process: %d contenders", procs, len(cs)))
		args := append(slices.Clone(modeFlags), "-only", strings.Join(names, ","), "-child-scaling", strconv.Itoa(procs))
		cmd := exec.Command(self, args...)
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			notes = append(notes, fmt.Sprintf("scaling: GOMAXPROCS=%d: child process: %v", procs, err))
			continue
		}
		var res scalingResult
		if err := json.Unmarshal(out, &res); err != nil {
			notes = append(notes, fmt.Sprintf("scaling: GOMAXPROCS=%d: child output: %v", procs, err))
			continue
		}
		rows, notes = append(rows, res.Rows...), append(notes, res.Notes...)
	}
	return rows, notes
}

// The keyed scenario runs each keyed set in a fresh process too, for its
// heap per key: this binary, started with -child-keyed.

// keyedResult is what a keyed child writes to stdout.
type keyedResult struct {
	Rows  []scenario.KeyedRow
	Notes []string
}

// childKeyed measures the keyed scenario for the named keyed set in this
// process and writes the rows to stdout as JSON.
func childKeyed(name string, p scenario.KeyedParams) error {
	for _, k := range contender.SelectKeyed(name) {
		if k.Name != name {
			continue
		}
		var res keyedResult
		res.Rows, res.Notes = scenario.KeyedOne(p, k, nil)
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	return fmt.Errorf("no keyed set %q", name)
}

// keyedInChildren runs the keyed scenario for each keyed set in a child
// process.
func keyedInChildren(p scenario.KeyedParams, ks []contender.Keyed, modeFlags []string, prog scenario.Progress) ([]scenario.KeyedRow, []string) {
	self, err := os.Executable()
	if err != nil {
		return nil, []string{fmt.Sprintf("keyed: cannot find this program to run each keyed set apart (%v); not measured", err)}
	}
	var rows []scenario.KeyedRow
	var notes []string
	for _, k := range ks {
		prog.Status(fmt.Sprintf("keyed: %s, in a fresh process", k.Name))
		cmd := exec.Command(self, append(slices.Clone(modeFlags), "-child-keyed", k.Name)...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			notes = append(notes, fmt.Sprintf("keyed: %s: child process: %v", k.Name, err))
			continue
		}
		var res keyedResult
		if err := json.Unmarshal(out, &res); err != nil {
			notes = append(notes, fmt.Sprintf("keyed: %s: child output: %v", k.Name, err))
			continue
		}
		rows, notes = append(rows, res.Rows...), append(notes, res.Notes...)
	}
	return rows, notes
}
