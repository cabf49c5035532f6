package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// machine describes what the figures were measured on: the CPU, how many
// processors Go may use, and the Go release, for a reader to tell whether
// two runs are comparable.
func machine() string {
	return fmt.Sprintf("%s, %d CPUs, GOMAXPROCS %d, %s %s/%s",
		cpuModel("/proc/cpuinfo"), runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// cpuModel returns the first "model name" in the cpuinfo file at path, or
// "CPU model unknown" where there is none, as off Linux.
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "CPU model unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "CPU model unknown"
}
