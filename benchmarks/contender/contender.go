// Package contender puts every timer under comparison behind one small
// interface, so that each benchmark scenario runs unchanged on all of them:
// time.AfterFunc, go-zero's collection.TimingWheel, hashedwheel (with its
// default ants executor and with pool.Inline), and the benchmark module's
// hierarchical and minheap timers.
package contender

import (
	"fmt"
	"strings"
	"time"
)

// Config is the shape of a wheel. Contenders without a tick ignore it.
type Config struct {
	Tick      time.Duration
	WheelSize int
}

// Handle identifies one scheduled timeout to Timer.Cancel.
type Handle any

// Timer is what the harness drives. Its methods are safe for concurrent
// use.
type Timer interface {
	// Schedule arranges for f to run once, after delay, and returns the
	// handle to cancel it with.
	Schedule(delay time.Duration, f func()) (Handle, error)
	// Cancel stops the timeout of h from running. It reports whether it
	// did, as far as the timer can tell (go-zero cannot: see its Note).
	Cancel(h Handle) bool
	// Rearm moves the pending timeout of h to delay from now, the way the
	// timer's users push an idle deadline back on every message, and
	// returns the handle to use from then on: h itself, or a new handle
	// where the timer could not move the timeout and scheduled it anew.
	Rearm(h Handle, delay time.Duration) (Handle, error)
	// Close stops the timer and releases what it owns. Contenders with
	// ReleasesOnClose drop their pending timeouts; for the others the
	// harness cancels its own.
	Close()
}

// Contender is one timer implementation under comparison.
type Contender struct {
	// Name identifies it in tables, charts and the -only flag.
	Name string
	// Ticked is true for wheels, whose cost and resolution depend on
	// Config.
	Ticked bool
	// ReleasesOnClose is true when Close drops the pending timeouts, so the
	// harness need not cancel them one by one.
	ReleasesOnClose bool
	// NeverEarly is true when the timer promises never to run a task
	// before its deadline; the tests hold it to that.
	NeverEarly bool
	// Executor says where expired tasks run.
	Executor string
	// Note is a one-line description for the report.
	Note string
	// New returns a running Timer of the given shape.
	New func(Config) (Timer, error)
}

// Baseline is the name of the contender every timing is compared with.
const Baseline = "time.AfterFunc"

// All returns every contender, the baseline first.
func All() []Contender {
	return []Contender{
		afterFuncContender(),
		goZeroContender(),
		hashedWheelContender(false),
		hashedWheelContender(true),
		hierarchicalContender(),
		minHeapContender(),
	}
}

// Select returns the contenders named in the comma-separated list, in
// All's order; an empty list selects all. The baseline is always included,
// since every figure is reported relative to it. Names of keyed sets
// (AllKeyed) are accepted and left to SelectKeyed; any other name is an
// error.
func Select(list string) ([]Contender, error) {
	all := All()
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	want := map[string]bool{Baseline: true}
	for _, name := range strings.Split(list, ",") {
		want[strings.TrimSpace(name)] = true
	}
	var out []Contender
	for _, c := range all {
		if want[c.Name] {
			out = append(out, c)
			delete(want, c.Name)
		}
	}
	for _, k := range AllKeyed() {
		delete(want, k.Name)
	}
	for name := range want {
		return nil, fmt.Errorf("contender: unknown contender %q", name)
	}
	return out, nil
}
