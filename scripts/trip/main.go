// Command trip makes, on a timer with the defaults, one timeout's trip
// (AfterFunc to its task, on the timer's own pool), worker passes that do
// nothing, and one Cancel of a timeout in the wheel (to its Cancelled
// hook, on the worker), and writes the coverage counters of each to
// <dir>/timeout, <dir>/pass and <dir>/cancel, from the task, the program
// and the hook themselves. Built with -cover, every function of the module
// whose counter is set ran on the trip, the worker's loop included, the
// timer's start-up not: scripts/trips.sh lists them.
//
//	go build -cover -covermode=atomic -coverpkg=./... -o trip ./scripts/trip && ./trip <dir>
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/coverage"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// linger is how long the worker lingers after activity, ticking with
// nothing to do; quiet is longer, so that it sleeps until its next due
// timeout before each trip.
const (
	linger = 50 * time.Millisecond
	quiet  = 200 * time.Millisecond
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: trip <dir>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "trip:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	h, err := hashedwheel.New()
	if err != nil {
		return err
	}
	defer h.Stop()
	if err := h.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	time.Sleep(quiet)
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	if _, err := h.AfterFunc(time.Millisecond, func() { done <- write(filepath.Join(dir, "timeout")) }); err != nil {
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	pending, err := h.NewTimeout(hooked{func() { done <- write(filepath.Join(dir, "cancel")) }}, time.Hour)
	if err != nil {
		return err
	}
	// The worker takes it in, then lingers, its passes doing nothing.
	time.Sleep(linger / 10)
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	time.Sleep(linger / 5)
	if err := write(filepath.Join(dir, "pass")); err != nil {
		return err
	}
	time.Sleep(quiet) // the timeout is in the wheel, the worker asleep
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	pending.Cancel()
	return <-done
}

// hooked is a task whose Cancelled hook calls cancelled.
type hooked struct{ cancelled func() }

func (hooked) Run(hashedwheel.Timeout)         {}
func (h hooked) Cancelled(hashedwheel.Timeout) { h.cancelled() }

// write writes the coverage counters, and their metadata, to dir.
func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := coverage.WriteMetaDir(dir); err != nil {
		return err
	}
	return coverage.WriteCountersDir(dir)
}
