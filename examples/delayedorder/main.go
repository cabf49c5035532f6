// Command delayedorder shows the classic delayed job of a shop: cancel an
// order that is still unpaid 30 minutes after it was placed.
//
// Placing an order arms a timeout of -pay-within whose task cancels the
// order. A payment cancels the timeout: if Cancel succeeds, the timer will
// never touch the order and the payment is accepted; if it fails, the
// timer has already cancelled the order, and the payment is refused (and
// refunded). Because Cancel succeeds for exactly one side, no order is both
// paid and cancelled, none is cancelled twice, and no unpaid order is
// missed: the run checks all three, and that no order is cancelled before
// its 30 minutes are up.
//
// Customers place -orders orders over -place-over; some pay in time, some
// pay after 35 to 45 minutes, the rest never pay. Time runs -scale times
// faster than real time, so the half hour takes seconds.
//
//	go run ./examples/delayedorder [-orders 5000] [-pay-within 30m] [-scale 1000]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

type config struct {
	Orders    int
	PayWithin time.Duration // simulated: unpaid orders are cancelled after this
	PlaceOver time.Duration // simulated: orders are placed over this period
	OnTime    float64       // fraction paying within 0 to 25 minutes
	Late      float64       // fraction paying after 35 to 45 minutes
	Scale     float64       // simulated time per real time
	Tick      time.Duration // real tick of the timer
	Seed      uint64
}

func defaultConfig() config {
	return config{
		Orders:    5000,
		PayWithin: 30 * time.Minute,
		PlaceOver: 10 * time.Minute,
		OnTime:    0.6,
		Late:      0.15,
		Scale:     1000,
		Tick:      10 * time.Millisecond,
		Seed:      1,
	}
}

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.Orders, "orders", cfg.Orders, "orders to place")
	flag.DurationVar(&cfg.PayWithin, "pay-within", cfg.PayWithin, "unpaid orders are cancelled after this (simulated time)")
	flag.DurationVar(&cfg.PlaceOver, "place-over", cfg.PlaceOver, "orders are placed over this period (simulated time)")
	flag.Float64Var(&cfg.OnTime, "on-time", cfg.OnTime, "fraction of customers paying within 5/6 of -pay-within")
	flag.Float64Var(&cfg.Late, "late", cfg.Late, "fraction of customers paying 7/6 to 3/2 of -pay-within after ordering")
	flag.Float64Var(&cfg.Scale, "scale", cfg.Scale, "time scale: simulated seconds per real second")
	flag.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick duration of the timer (real time)")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayedorder:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, cfg)
	if err := r.check(); err != nil {
		fmt.Fprintln(os.Stderr, "delayedorder:", err)
		os.Exit(1)
	}
}

// The states of an order. It starts open and ends paid or cancelled.
const (
	open int32 = iota
	paid
	cancelled
)

// order is one order, and the TimerTask that cancels it if it is unpaid.
type order struct {
	shop     *shop
	placedAt time.Time
	timeout  hashedwheel.Timeout

	state       atomic.Int32
	cancelRuns  atomic.Int32 // times the cancelling task ran: at most once
	cancelledAt atomic.Int64 // real nanoseconds after placedAt
	refused     atomic.Int32 // payments refused because the order was cancelled
	conflicts   atomic.Int32 // state changes that found the order not open: must stay 0
}

// Run is the timer's task: the order is still unpaid after PayWithin.
func (o *order) Run(hashedwheel.Timeout) {
	o.cancelRuns.Add(1)
	o.cancelledAt.Store(int64(time.Since(o.placedAt)))
	if !o.state.CompareAndSwap(open, cancelled) {
		o.conflicts.Add(1) // cancelled an order that was paid or already cancelled
		return
	}
	o.shop.settle()
}

// pay is a customer's payment. It wins only if it cancels the timeout
// before the timer claims it.
func (o *order) pay() bool {
	if !o.timeout.Cancel() {
		o.refused.Add(1) // the timer cancelled the order: refund the payment
		return false
	}
	if !o.state.CompareAndSwap(open, paid) {
		o.conflicts.Add(1)
		return true
	}
	o.shop.settle()
	return true
}

// shop counts the orders that are neither paid nor cancelled.
type shop struct {
	unsettled atomic.Int64
	settled   chan struct{} // closed when every order is paid or cancelled
}

func (s *shop) settle() {
	if s.unsettled.Add(-1) == 0 {
		close(s.settled)
	}
}

// customer is what the customer of one order does, in simulated time after
// placing it.
type customer int

const (
	paysOnTime customer = iota
	paysLate
	neverPays
)

// event is a step of the simulation, at a simulated time since the start.
type event struct {
	at    time.Duration
	order int
	pay   bool // false: the order is placed
}

// report is what the run found.
type report struct {
	Orders                                 int
	PlannedOnTime, PlannedLate, PlannedNot int
	Paid, Cancelled, Open                  int
	PaidAfterDeadline                      int // late payments that beat a late timer
	Refused                                int
	CancelledTwice, Conflicts              int
	CancelledEarly                         int
	CancelAfter                            []time.Duration // simulated, after placement
	Leftover                               int             // timeouts Stop returned: orders the timer missed
	Stats                                  hashedwheel.Stats
	Elapsed                                time.Duration
}

// check reports what went wrong, if anything.
func (r *report) check() error {
	var errs []error
	if r.Paid+r.Cancelled != r.Orders || r.Open != 0 {
		errs = append(errs, fmt.Errorf("%d paid + %d cancelled of %d orders; %d still open (missed)", r.Paid, r.Cancelled, r.Orders, r.Open))
	}
	if r.CancelledTwice != 0 || r.Conflicts != 0 {
		errs = append(errs, fmt.Errorf("%d orders cancelled twice, %d cancelled after payment or paid after cancellation", r.CancelledTwice, r.Conflicts))
	}
	if r.Leftover != 0 {
		errs = append(errs, fmt.Errorf("%d timeouts never ran", r.Leftover))
	}
	if r.CancelledEarly != 0 {
		errs = append(errs, fmt.Errorf("%d orders cancelled before their time", r.CancelledEarly))
	}
	if r.Cancelled < r.PlannedNot {
		errs = append(errs, fmt.Errorf("only %d orders cancelled, but %d were never paid", r.Cancelled, r.PlannedNot))
	}
	return errors.Join(errs...)
}

func (r *report) print(w io.Writer, cfg config) {
	fmt.Fprintf(w, "%d orders placed over %v; unpaid orders are cancelled %v after placement\n",
		r.Orders, cfg.PlaceOver, cfg.PayWithin)
	fmt.Fprintf(w, "(time runs %gx faster: %v takes %v; the run took %v)\n\n",
		cfg.Scale, cfg.PayWithin, scaled(cfg, cfg.PayWithin).Round(time.Millisecond), r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "customers: %d pay in time, %d pay 35-45 minutes after ordering, %d never pay\n",
		r.PlannedOnTime, r.PlannedLate, r.PlannedNot)
	fmt.Fprintf(w, "paid:      %5d  (each payment cancelled the order's timeout)\n", r.Paid)
	if r.PaidAfterDeadline > 0 {
		fmt.Fprintf(w, "           %5d of them paid after the deadline but before the late timer ran\n", r.PaidAfterDeadline)
	}
	fmt.Fprintf(w, "cancelled: %5d  by the timer", r.Cancelled)
	if len(r.CancelAfter) > 0 {
		s := slices.Sorted(slices.Values(r.CancelAfter))
		fmt.Fprintf(w, ", after %v (first) to %v (last), median %v",
			s[0].Round(time.Second), s[len(s)-1].Round(time.Second), s[len(s)/2].Round(time.Second))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "refused:   %5d  payments for orders already cancelled (refunded)\n\n", r.Refused)
	fmt.Fprintf(w, "cancelled twice: %d; both paid and cancelled: %d; missed (unpaid, still open): %d; cancelled early: %d\n",
		r.CancelledTwice, r.Conflicts, r.Open, r.CancelledEarly)
	s := r.Stats
	fmt.Fprintf(w, "timer: %d timeouts scheduled, %d cancelled by a payment, %d expired\n", s.Scheduled, s.Cancelled, s.Expired)
	if err := r.check(); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
	} else {
		fmt.Fprintln(w, "ok: every order paid or cancelled, exactly once, none before its time")
	}
}

// scaled converts a simulated duration to real time.
func scaled(cfg config, d time.Duration) time.Duration {
	return time.Duration(float64(d) / cfg.Scale)
}

// run places the orders and plays the customers' payments in scaled time,
// then inspects every order.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Orders < 1 || cfg.Scale <= 0 || cfg.PayWithin <= 0 || cfg.OnTime < 0 || cfg.Late < 0 || cfg.OnTime+cfg.Late > 1 {
		return nil, fmt.Errorf("invalid configuration %+v", cfg)
	}
	// The task only flips the order's state: cheap enough to run on the
	// timer's own goroutine. With pool.Inline, Stop also waits for it.
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(cfg.Tick),
		hashedwheel.WithExecutor(pool.Inline),
	)
	if err != nil {
		return nil, err
	}
	defer timer.Stop()
	sh := &shop{settled: make(chan struct{})}
	sh.unsettled.Store(int64(cfg.Orders))

	// Plan the simulation: when each order is placed and when, if ever, its
	// customer pays.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	r := &report{Orders: cfg.Orders}
	orders := make([]*order, cfg.Orders)
	kinds := make([]customer, cfg.Orders)
	events := make([]event, 0, 2*cfg.Orders)
	uniform := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	for i := range orders {
		orders[i] = &order{shop: sh}
		placed := uniform(0, cfg.PlaceOver)
		events = append(events, event{at: placed, order: i})
		switch p := rng.Float64(); {
		case p < cfg.OnTime:
			kinds[i] = paysOnTime
			r.PlannedOnTime++
			events = append(events, event{at: placed + uniform(0, cfg.PayWithin*5/6), order: i, pay: true})
		case p < cfg.OnTime+cfg.Late:
			kinds[i] = paysLate
			r.PlannedLate++
			events = append(events, event{at: placed + uniform(cfg.PayWithin*7/6, cfg.PayWithin*3/2), order: i, pay: true})
		default:
			kinds[i] = neverPays
			r.PlannedNot++
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return int(a.at - b.at) })

	// Play it: one goroutine does each step at its scaled time.
	start := time.Now()
	for _, ev := range events {
		if !sleepUntil(ctx, start.Add(scaled(cfg, ev.at))) {
			return r, ctx.Err()
		}
		o := orders[ev.order]
		if !ev.pay {
			o.placedAt = time.Now()
			t, err := timer.NewTimeout(o, scaled(cfg, cfg.PayWithin))
			if err != nil {
				return r, err
			}
			o.timeout = t
			continue
		}
		if o.pay() && kinds[ev.order] == paysLate {
			r.PaidAfterDeadline++
		}
	}
	// Wait for the timer to cancel the last unpaid orders; give up well
	// after the last one's time, to report any order it missed.
	giveUp := time.NewTimer(scaled(cfg, cfg.PlaceOver+2*cfg.PayWithin) + 10*time.Second)
	defer giveUp.Stop()
	select {
	case <-sh.settled:
	case <-giveUp.C:
	case <-ctx.Done():
		return r, ctx.Err()
	}
	r.Leftover = len(timer.Stop())
	r.Elapsed = time.Since(start)

	for _, o := range orders {
		switch o.state.Load() {
		case paid:
			r.Paid++
		case cancelled:
			r.Cancelled++
			after := time.Duration(float64(o.cancelledAt.Load()) * cfg.Scale)
			r.CancelAfter = append(r.CancelAfter, after)
			if time.Duration(o.cancelledAt.Load()) < scaled(cfg, cfg.PayWithin) {
				r.CancelledEarly++
			}
		default:
			r.Open++
		}
		if o.cancelRuns.Load() > 1 {
			r.CancelledTwice++
		}
		r.Conflicts += int(o.conflicts.Load())
		r.Refused += int(o.refused.Load())
	}
	r.Stats = timer.Stats()
	return r, nil
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
