package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
)

// config is what one run of the shop does.
type config struct {
	DB        string        // the SQLite file, or the URL of a PostgreSQL database shared by replicas
	Replica   string        // this replica's name in a shared database
	Window    time.Duration // a shared database: orders due within it are claimed
	Lease     time.Duration // a shared database: another replica takes an order over this long after its deadline
	Listen    string        // serve the shop's HTTP API on this address instead of playing customers
	Customers []string      // play the customers against the replicas at these base URLs, with no database of its own
	Orders    int           // orders placed by this run
	PlaceOver time.Duration // orders are placed at random times over this period
	PayWithin time.Duration // an order unpaid this long after it was placed is cancelled
	Pay       float64       // fraction of customers who pay
	PayBy     time.Duration // a customer who pays does so at a random time up to this long after placing; 0: 1.5×PayWithin
	Tick      time.Duration // the wheel's tick
	Seed      uint64
	Events    bool // print a line per order placed, paid, refused and cancelled
}

func defaultConfig() config {
	return config{
		Window:    time.Minute,
		Lease:     10 * time.Second,
		Orders:    200,
		PlaceOver: 2 * time.Second,
		PayWithin: 2 * time.Second,
		Pay:       0.7,
		Tick:      20 * time.Millisecond,
		Seed:      1,
	}
}

func (c config) validate() error {
	if c.DB == "" || c.Orders < 0 || c.PlaceOver < 0 || c.PayWithin <= 0 || c.Tick <= 0 || c.Pay < 0 || c.Pay > 1 ||
		c.PayBy < 0 || c.Window <= 0 || c.Lease <= 0 {
		return fmt.Errorf("invalid configuration %+v", c)
	}
	return nil
}

// shared reports whether the database is a PostgreSQL server, shared by
// replicas, rather than an SQLite file.
func (c config) shared() bool {
	return strings.HasPrefix(c.DB, "postgres://") || strings.HasPrefix(c.DB, "postgresql://")
}

// database is where a run keeps its orders: an SQLite file, or a
// PostgreSQL database shared by replicas.
type database interface {
	Orders
	// Audit reads every order and every cancellation; an order pending
	// more than grace after its deadline counts as missed.
	Audit(ctx context.Context, grace time.Duration) (Audit, error)
	// Unsettled counts the pending orders, and says how long the last of
	// them has to its deadline.
	Unsettled(ctx context.Context) (n int, last time.Duration, err error)
	Close() error
}

// openDatabase opens the run's database.
func openDatabase(ctx context.Context, cfg config, log *slog.Logger) (database, error) {
	if cfg.shared() {
		return OpenPGStore(ctx, cfg.DB, cfg.Replica,
			WithWindow(cfg.Window), WithLease(cfg.Lease), WithStoreLogger(log))
	}
	store, err := OpenStore(ctx, cfg.DB)
	if err != nil {
		return nil, err
	}
	return store.Orders(clock.NewReal()), nil
}

// report is what one run did, and what the database holds at its end.
type report struct {
	Recovery      Recovery
	Placed, Paid  int
	Refused       int   // payments that came after the cancellation committed
	CancelledHere int   // cancellations this run committed, overdue ones included
	Served        bool  // served the HTTP API: the other replicas go on
	Customers     bool  // played customers against replicas: no database here
	Retried       int64 // requests the load balancer sent to a second replica
	Audit         Audit
	Elapsed       time.Duration
}

// counter counts a run's events and prints them, from any goroutine.
type counter struct {
	mu sync.Mutex // guards r
	r  *report
	ev *eventLog
}

func (c *counter) placed(id int64) {
	c.mu.Lock()
	c.r.Placed++
	c.mu.Unlock()
	c.ev.printf("placed id=%d", id)
}

func (c *counter) paid(id int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.r.Paid++
		c.ev.printf("paid id=%d", id)
	} else if errors.Is(err, ErrOrderCancelled) {
		c.r.Refused++
		c.ev.printf("refused id=%d", id)
	}
}

func (c *counter) cancelled(o Order) {
	c.mu.Lock()
	c.r.CancelledHere++
	c.mu.Unlock()
	c.ev.printf("cancelled id=%d late=%v", o.ID, o.Settled.Sub(o.Deadline))
}

// run recovers the orders this replica holds in cfg.DB, then either serves
// the shop's HTTP API on cfg.Listen until ctx ends, or places cfg.Orders
// new orders, plays their customers' payments in real time, and returns
// once no order is pending.
func run(ctx context.Context, cfg config, out io.Writer, log *slog.Logger) (*report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(cfg.Customers) > 0 {
		return playAgainst(ctx, cfg, out)
	}
	start := time.Now()
	db, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer db.Close()

	r := &report{Served: cfg.Listen != ""}
	c := &counter{r: r, ev: &eventLog{w: out, on: cfg.Events}}
	svc, err := Start(ctx, db,
		WithPayWithin(cfg.PayWithin),
		WithTick(cfg.Tick),
		WithLogger(log),
		WithOnCancel(c.cancelled))
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	r.Recovery = svc.Recovery()
	fmt.Fprintf(out, "recovered: rearmed=%d overdue_cancelled=%d claimed=%d\n",
		r.Recovery.Rearmed, r.Recovery.Overdue, r.Recovery.Claimed)

	if r.Served {
		err := serve(ctx, cfg.Listen, shopHandler(svc, c, log), out)
		svc.Close()
		r.Elapsed = time.Since(start)
		return r, err
	}
	if err := playCustomers(ctx, cfg, svc, c); err != nil {
		return r, err
	}
	if err := waitSettled(ctx, db, cfg.Tick); err != nil {
		return r, err
	}
	svc.Close()
	r.Elapsed = time.Since(start)
	r.Audit, err = db.Audit(ctx, 0)
	return r, err
}

// playCustomers places cfg.Orders orders on f and pays some, each at its
// time, counting them in c. A payment refused, the order cancelled first,
// is counted; any other error ends the run.
func playCustomers(ctx context.Context, cfg config, f front, c *counter) error {
	payBy := cfg.PayBy
	if payBy == 0 {
		payBy = cfg.PayWithin * 3 / 2 // some too late
	}
	steps := customers(cfg.Seed, cfg.Orders, cfg.PlaceOver, payBy, cfg.Pay)
	return play(ctx, steps, f, 64, func(st step, id int64, err error) error {
		switch {
		case !st.pay && err == nil:
			c.placed(id)
		case st.pay && (err == nil || errors.Is(err, ErrOrderCancelled)):
			c.paid(id, err)
		default:
			return err
		}
		return nil
	})
}

// playAgainst plays the customers against the replicas at cfg.Customers,
// through a load balancer, and reports what they acknowledged.
func playAgainst(ctx context.Context, cfg config, out io.Writer) (*report, error) {
	start := time.Now()
	lb, err := newBalancer(cfg.Customers)
	if err != nil {
		return nil, err
	}
	r := &report{Customers: true}
	err = playCustomers(ctx, cfg, lb, &counter{r: r, ev: &eventLog{w: out, on: cfg.Events}})
	r.Retried, r.Elapsed = lb.retried.Load(), time.Since(start)
	return r, err
}

// waitSettled returns once no order is pending, polling the database, or
// fails if one stays pending long after the latest deadline.
func waitSettled(ctx context.Context, db database, tick time.Duration) error {
	poll := time.NewTicker(max(tick, 50*time.Millisecond))
	defer poll.Stop()
	var giveUp time.Time
	for {
		n, last, err := db.Unsettled(ctx)
		switch {
		case err != nil:
			return err
		case n == 0:
			return nil
		}
		if g := time.Now().Add(last + 10*time.Second + 10*tick); g.After(giveUp) {
			giveUp = g
		} else if time.Now().After(giveUp) {
			return fmt.Errorf("%d orders still pending, the last due %v ago", n, -last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
		}
	}
}

// eventLog writes one line per event, each in a single Write, from any
// goroutine.
type eventLog struct {
	mu sync.Mutex
	w  io.Writer
	on bool
}

func (e *eventLog) printf(format string, args ...any) {
	if !e.on {
		return
	}
	line := fmt.Sprintf(format+"\n", args...)
	e.mu.Lock()
	defer e.mu.Unlock()
	io.WriteString(e.w, line) // a trace: the database is the record
}

func (r *report) print(w io.Writer, cfg config) {
	a := r.Audit
	if r.Customers { // the replicas cancel, and go on: the database is not settled
		fmt.Fprintf(w, "this run: %d orders placed, %d paid, %d payments refused (already cancelled), in %v; %d requests sent to a second replica\n",
			r.Placed, r.Paid, r.Refused, r.Elapsed.Round(time.Millisecond), r.Retried)
		return
	}
	fmt.Fprintf(w, "this run: %d orders placed, %d paid, %d payments refused (already cancelled), %d cancelled, in %v\n",
		r.Placed, r.Paid, r.Refused, r.CancelledHere, r.Elapsed.Round(time.Millisecond))
	if r.Served {
		return // the other replicas go on: the database is not settled
	}
	fmt.Fprintf(w, "database %s: %d orders: %d paid, %d cancelled, %d pending\n", redact(cfg.DB), a.Orders, a.Paid, a.Cancelled, a.Pending)
	if l := a.CancelLatenesses; len(l) > 0 {
		fmt.Fprintf(w, "cancelled after the deadline by: %v (first) to %v (last), median %v\n", l[0], l[len(l)-1], l[len(l)/2])
	}
	if err := a.Err(); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
		return
	}
	fmt.Fprintln(w, "ok: every order paid or cancelled, each cancellation committed once, none before its deadline")
}

// redact is the database's name without a password.
func redact(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		return u.Redacted()
	}
	return db
}
