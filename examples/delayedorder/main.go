// Command delayedorder cancels the orders of a shop that are still unpaid
// some time after they were placed (30 minutes in a real shop, 2 seconds
// here), and survives a restart.
//
// The orders live in an SQLite database file; the timing wheel holds one
// timeout per pending order, in memory. At start every pending order is
// armed again with the time left to its deadline, and one whose deadline
// passed while no process ran is cancelled at once. A cancellation is a
// conditional UPDATE that commits only if the order is still pending and
// due, so it commits once however often it is attempted, never after a
// payment and never before the deadline.
//
// Customers place -orders orders over -place-over; a fraction -pay of them
// pay, some in time and some too late. The run ends when no order is
// pending, and checks the whole database. Interrupt it and run it again:
// the orders left pending are picked up.
//
//	cd examples/delayedorder && go run . [-db delayedorder.db] [-orders 200] [-pay-within 2s] [-events]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// defaultDB is the database file of a run without -db: in the working
// directory, where a second run, after a restart of the machine too, finds
// the orders the first one left.
const defaultDB = "delayedorder.db"

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the program with the given arguments and returns its exit
// code.
func realMain(args []string, stdout, stderr io.Writer) int {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("delayedorder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.DB, "db", defaultDB, "SQLite database file, created if missing; the default is in the working directory")
	fs.IntVar(&cfg.Orders, "orders", cfg.Orders, "orders to place (0: only settle the pending ones)")
	fs.DurationVar(&cfg.PlaceOver, "place-over", cfg.PlaceOver, "orders are placed over this period")
	fs.DurationVar(&cfg.PayWithin, "pay-within", cfg.PayWithin, "unpaid orders are cancelled this long after placement")
	fs.Float64Var(&cfg.Pay, "pay", cfg.Pay, "fraction of customers who pay, at a random time up to 1.5 × -pay-within")
	fs.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick of the timing wheel: cancellations come up to about a tick late")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed of the customers")
	fs.BoolVar(&cfg.Events, "events", cfg.Events, "print a line per order placed, paid, refused and cancelled")
	if err := fs.Parse(args); err != nil {
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := run(ctx, cfg, stdout, log)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "delayedorder: interrupted; the pending orders are armed again at the next run")
		} else {
			fmt.Fprintln(stderr, "delayedorder:", err)
		}
		return 1
	}
	r.print(stdout, cfg)
	if err := r.Audit.Err(); err != nil {
		return 1
	}
	return 0
}
