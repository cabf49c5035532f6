// Command delayedorder cancels the orders of a shop that are still unpaid
// some time after they were placed (30 minutes in a real shop, 2 seconds
// here), and survives a restart.
//
// The orders live in a database: an SQLite file for one process, or a
// PostgreSQL database that replicas of the shop share (-db postgres://…).
// The timing wheel holds one timeout per order this process holds, in
// memory. At start the held orders are armed again with the time left to
// their deadline, and one whose deadline passed while no process ran is
// cancelled at once. A cancellation is a conditional UPDATE that commits
// only if the order is still pending, due and held by the process that
// asks, so it commits once however often it is attempted, never after a
// payment and never before the deadline. Replicas claim the orders due
// within a window ahead, and take over those of a replica that died when
// their leases run out.
//
// Customers place -orders orders over -place-over; a fraction -pay of them
// pay, some in time and some too late. The run ends when no order is
// pending, and checks the whole database. Interrupt it and run it again:
// the orders left pending are picked up. With -listen the process serves
// the shop's HTTP API instead, as one replica behind a load balancer.
//
//	cd examples/delayedorder && go run . [-db delayedorder.db] [-orders 200] [-pay-within 2s] [-events]
//	go run . -db postgres://localhost/shop -replica a -listen :8080
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// defaultDB is the database file of a run without -db: in the working
// directory, where a second run, after a restart of the machine too, finds
// the orders the first one left.
const defaultDB = "delayedorder.db"

// defaultReplica is the host's name: one replica per machine or container
// keeps its name across restarts.
func defaultReplica() string {
	name, err := os.Hostname()
	if err != nil || !replicaName.MatchString(name) {
		return "replica"
	}
	return name
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the program with the given arguments and returns its exit
// code.
func realMain(args []string, stdout, stderr io.Writer) int {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("delayedorder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.DB, "db", defaultDB, "SQLite database file, created if missing; the default is in the working directory; or the URL of a PostgreSQL database shared by replicas (postgres://...)")
	fs.StringVar(&cfg.Replica, "replica", defaultReplica(), "name of this replica in a PostgreSQL database, its own and the same across its restarts")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "PostgreSQL: claim the orders due within this window ahead")
	fs.DurationVar(&cfg.Lease, "lease", cfg.Lease, "PostgreSQL: another replica takes an order over this long after its deadline if its holder has not cancelled it")
	fs.StringVar(&cfg.Listen, "listen", "", "serve the shop's HTTP API on this address (host:port) instead of playing customers")
	fs.Func("customers", "play the customers against replicas serving the HTTP API at these base URLs, comma-separated (http://host:port,...), through a load balancer, with no database of its own", func(v string) error {
		cfg.Customers = strings.Split(v, ",")
		return nil
	})
	fs.IntVar(&cfg.Orders, "orders", cfg.Orders, "orders to place (0: only settle the pending ones)")
	fs.DurationVar(&cfg.PlaceOver, "place-over", cfg.PlaceOver, "orders are placed over this period")
	fs.DurationVar(&cfg.PayWithin, "pay-within", cfg.PayWithin, "unpaid orders are cancelled this long after placement")
	fs.Float64Var(&cfg.Pay, "pay", cfg.Pay, "fraction of customers who pay")
	fs.DurationVar(&cfg.PayBy, "pay-by", cfg.PayBy, "customers who pay do so at a random time up to this long after placing the order; 0: 1.5 × -pay-within, so that some pay too late")
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
		if ctx.Err() != nil && cfg.Listen == "" {
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
