package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// config is what one run of the shop does.
type config struct {
	DB        string        // the database file; orders left pending by an earlier run are recovered
	Orders    int           // orders placed by this run
	PlaceOver time.Duration // orders are placed at random times over this period
	PayWithin time.Duration // an order unpaid this long after it was placed is cancelled
	Pay       float64       // fraction of customers who pay, at a random time up to 1.5×PayWithin
	Tick      time.Duration // the wheel's tick
	Seed      uint64
	Events    bool // print a line per order placed, paid, refused and cancelled
}

func defaultConfig() config {
	return config{
		Orders:    200,
		PlaceOver: 2 * time.Second,
		PayWithin: 2 * time.Second,
		Pay:       0.7,
		Tick:      20 * time.Millisecond,
		Seed:      1,
	}
}

func (c config) validate() error {
	if c.DB == "" || c.Orders < 0 || c.PlaceOver < 0 || c.PayWithin <= 0 || c.Tick <= 0 || c.Pay < 0 || c.Pay > 1 {
		return fmt.Errorf("invalid configuration %+v", c)
	}
	return nil
}

// report is what one run did, and what the database holds at its end.
type report struct {
	Recovery      Recovery
	Placed, Paid  int
	Refused       int // payments that came after the cancellation committed
	CancelledHere int // cancellations this run committed, overdue ones included
	Audit         Audit
	Elapsed       time.Duration
}

// run recovers the orders pending in cfg.DB, places cfg.Orders new ones,
// plays their customers' payments in real time, and returns once no order
// is pending.
func run(ctx context.Context, cfg config, out io.Writer, log *slog.Logger) (*report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	store, err := OpenStore(ctx, cfg.DB)
	if err != nil {
		return nil, err
	}
	defer store.Close()

	r := &report{}
	ev := &eventLog{w: out, on: cfg.Events}
	var mu sync.Mutex // guards r.CancelledHere, written by timer goroutines
	svc, err := Start(ctx, store,
		WithPayWithin(cfg.PayWithin),
		WithTick(cfg.Tick),
		WithLogger(log),
		WithOnCancel(func(o Order) {
			mu.Lock()
			r.CancelledHere++
			mu.Unlock()
			ev.printf("cancelled id=%d late=%v", o.ID, o.Settled.Sub(o.Deadline))
		}))
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	r.Recovery = svc.Recovery()
	fmt.Fprintf(out, "recovered: rearmed=%d overdue_cancelled=%d\n", r.Recovery.Rearmed, r.Recovery.Overdue)

	if err := playCustomers(ctx, cfg, svc, r, ev); err != nil {
		return r, err
	}
	if err := waitSettled(ctx, store, cfg.Tick); err != nil {
		return r, err
	}
	svc.Close()
	mu.Lock()
	defer mu.Unlock()
	r.Elapsed = time.Since(start)
	r.Audit, err = store.Audit(ctx, time.Now(), 0)
	return r, err
}

// step is a customer's action at a time after the run started.
type step struct {
	at    time.Duration
	order int  // index among the orders this run places
	pay   bool // false: the order is placed
}

// playCustomers places the orders and makes the payments, each at its time.
func playCustomers(ctx context.Context, cfg config, svc *Service, r *report, ev *eventLog) error {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	uniform := func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		return time.Duration(rng.Int64N(int64(d)))
	}
	steps := make([]step, 0, 2*cfg.Orders)
	for i := range cfg.Orders {
		placed := uniform(cfg.PlaceOver)
		steps = append(steps, step{at: placed, order: i})
		if rng.Float64() < cfg.Pay {
			steps = append(steps, step{at: placed + uniform(cfg.PayWithin*3/2), order: i, pay: true})
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })

	ids := make([]int64, cfg.Orders)
	start := time.Now()
	for _, st := range steps {
		if !sleepUntil(ctx, start.Add(st.at)) {
			return ctx.Err()
		}
		if !st.pay {
			o, err := svc.Place(ctx)
			if err != nil {
				return err
			}
			ids[st.order] = o.ID
			r.Placed++
			ev.printf("placed id=%d deadline=%d", o.ID, o.Deadline.UnixMilli())
			continue
		}
		id := ids[st.order]
		switch _, err := svc.Pay(ctx, id); {
		case err == nil:
			r.Paid++
			ev.printf("paid id=%d", id)
		case errors.Is(err, ErrOrderCancelled):
			r.Refused++
			ev.printf("refused id=%d", id)
		default:
			return err
		}
	}
	return nil
}

// waitSettled returns once no order is pending, polling the database, or
// fails if one stays pending long after the latest deadline.
func waitSettled(ctx context.Context, store *Store, tick time.Duration) error {
	pending, err := store.Pending(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	giveUp := pending[len(pending)-1].Deadline.Add(10*time.Second + 10*tick)
	poll := time.NewTicker(max(tick, 50*time.Millisecond))
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
		}
		pending, err := store.Pending(ctx)
		switch {
		case err != nil:
			return err
		case len(pending) == 0:
			return nil
		case time.Now().After(giveUp):
			return fmt.Errorf("%d orders still pending, the first due at %v", len(pending), pending[0].Deadline)
		}
	}
}

// sleepUntil waits until t, and reports false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
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
	fmt.Fprintf(w, "this run: %d orders placed, %d paid, %d payments refused (already cancelled), %d cancelled, in %v\n",
		r.Placed, r.Paid, r.Refused, r.CancelledHere, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "database %s: %d orders: %d paid, %d cancelled, %d pending\n", cfg.DB, a.Orders, a.Paid, a.Cancelled, a.Pending)
	if l := a.CancelLatenesses; len(l) > 0 {
		fmt.Fprintf(w, "cancelled after the deadline by: %v (first) to %v (last), median %v\n", l[0], l[len(l)-1], l[len(l)/2])
	}
	if err := a.Err(); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
		return
	}
	fmt.Fprintln(w, "ok: every order paid or cancelled, each cancellation committed once, none before its deadline")
}
