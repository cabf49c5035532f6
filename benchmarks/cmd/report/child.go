package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

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
