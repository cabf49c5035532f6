// Command lease runs a lease service on the program's one shared timer:
// clients hold named leases for a term and renew them to keep them; an
// owner that stops renewing loses its lease when the term ends; a client
// waits for a lease with a deadline; a report runs every second.
//
//	go run ./examples/lease
//
// Its test replaces the shared timer with one on a clock.Fake and drives
// 30-minute leases in microseconds (main_test.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	term := flag.Duration("term", 2*time.Second, "the term of a lease")
	flag.Parse()
	err := run(context.Background(), os.Stdout, *term)
	timer.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lease:", err)
		os.Exit(1)
	}
}

// run plays one scene in real time: "alice" keeps renewing her lease,
// "bob" takes his and goes quiet until it lapses, "carol" waits for bob's
// lease, "dave" gives up waiting for alice's.
func run(ctx context.Context, out io.Writer, term time.Duration) error {
	leases := NewLeases(term, out)
	report, err := leases.Report(term/2, out)
	if err != nil {
		return err
	}
	defer report.Cancel()
	for _, a := range [][2]string{{"primary", "alice"}, {"backup", "bob"}} {
		if err := leases.Acquire(a[0], a[1]); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s holds %q for %v\n", a[1], a[0], term)
	}
	renewals, err := timer.Every(term/3, func() {
		if err := leases.Renew("primary", "alice"); err != nil {
			fmt.Fprintln(out, "alice:", err)
		}
	})
	if err != nil {
		return err
	}
	defer renewals.Cancel()

	waited := make(chan error, 1)
	go func() { waited <- acquireWithin(ctx, leases, "backup", "carol", 2*term) }()
	start := time.Now()
	if err := acquireWithin(ctx, leases, "primary", "dave", term); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("dave: %v, want a deadline: alice renews", err)
	}
	fmt.Fprintf(out, "dave gave up on %q after %v: alice keeps renewing\n", "primary", time.Since(start).Round(time.Millisecond))
	if err := <-waited; err != nil {
		return fmt.Errorf("carol: %w", err)
	}
	fmt.Fprintf(out, "carol holds %q, %v after she asked\n", "backup", time.Since(start).Round(time.Millisecond))
	held, lapsed := leases.Counts()
	fmt.Fprintf(out, "done: %d held, %d lapsed\n", held, lapsed)
	return nil
}

// acquireWithin waits up to wait for a lease, with a deadline the wheel
// keeps, passed down as a request's would be.
func acquireWithin(ctx context.Context, leases *Leases, name, owner string, wait time.Duration) error {
	ctx, cancel := timer.WithTimeout(ctx, wait)
	defer cancel()
	return leases.AcquireWait(ctx, name, owner)
}
