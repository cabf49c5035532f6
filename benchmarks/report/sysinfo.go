package report

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where and when the figures were taken: without it they
// mean nothing.
type Machine struct {
	CPUModel    string
	NumCPU      int
	GOMAXPROCS  int
	GoVersion   string
	OS, Arch    string
	Kernel      string
	Virtualised string // "yes (hypervisor flag)", "no", or "unknown"
	Clocksource string
	TimerSlack  string
	GOGC        string
	LoadAvg     string // 1, 5 and 15 minute load averages when the run began
	Date        time.Time
}

// ReadMachine describes the current machine, reading /proc and /sys where
// they exist and writing "unknown" where they do not.
func ReadMachine() Machine {
	m := Machine{
		CPUModel:    "unknown",
		NumCPU:      runtime.NumCPU(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		GoVersion:   runtime.Version(),
		OS:          runtime.GOOS,
		Arch:        runtime.GOARCH,
		Kernel:      firstLine("/proc/sys/kernel/osrelease"),
		Virtualised: "unknown",
		Clocksource: firstLine("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
		TimerSlack:  firstLine("/proc/self/timerslack_ns"),
		GOGC:        os.Getenv("GOGC"),
		LoadAvg:     "unknown",
		Date:        time.Now().UTC(),
	}
	if m.TimerSlack != "unknown" {
		m.TimerSlack += " ns"
	}
	if m.GOGC == "" {
		m.GOGC = "100 (default)"
	}
	if f := strings.Fields(firstLine("/proc/loadavg")); len(f) >= 3 {
		m.LoadAvg = strings.Join(f[:3], " ")
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		m.Virtualised = "no"
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 64*1024), 1024*1024)
		for s.Scan() {
			key, value, ok := strings.Cut(s.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(key) {
			case "model name":
				m.CPUModel = strings.TrimSpace(value)
			case "flags":
				if strings.Contains(" "+value+" ", " hypervisor ") {
					m.Virtualised = "yes (hypervisor flag)"
				}
			}
		}
	}
	return m
}

// Busy reports whether the machine was already loaded when the run began:
// a one-minute load average above a quarter of its CPUs.
func (m Machine) Busy() bool {
	f := strings.Fields(m.LoadAvg)
	if len(f) == 0 {
		return false
	}
	load, err := strconv.ParseFloat(f[0], 64)
	return err == nil && load > float64(m.NumCPU)/4
}

// Sentence says in one sentence which machine the figures come from.
func (m Machine) Sentence() string {
	return fmt.Sprintf("These figures come from one machine: %s, %d CPUs, %s, %s/%s, %s, on %s.",
		m.CPUModel, m.NumCPU, virtualisedWord(m.Virtualised), m.OS, m.Arch, m.GoVersion, m.Date.Format("2006-01-02"))
}

func virtualisedWord(v string) string {
	switch {
	case strings.HasPrefix(v, "yes"):
		return "virtualised"
	case v == "no":
		return "not virtualised"
	}
	return "virtualisation unknown"
}

// firstLine returns the first line of a file, trimmed, or "unknown".
func firstLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "unknown"
	}
	return line
}
