package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func TestDelayedOrder(t *testing.T) {
	cfg := defaultConfig()
	cfg.Orders = 400
	cfg.Scale = 6000 // 30 minutes in 300ms; the whole run in about 550ms
	cfg.Tick = 5 * time.Millisecond
	r, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	if r.PlannedOnTime+r.PlannedLate+r.PlannedNot != cfg.Orders || r.PlannedNot == 0 || r.PlannedLate == 0 {
		t.Fatalf("plan %+v: want some customers of each kind", r)
	}
	// Whatever the timing, only paying customers can have paid, and every
	// refused payment is one that lost to the timer.
	if r.Paid > r.PlannedOnTime+r.PlannedLate {
		t.Errorf("%d paid, but only %d customers pay", r.Paid, r.PlannedOnTime+r.PlannedLate)
	}
	if r.Paid+r.Refused != r.PlannedOnTime+r.PlannedLate {
		t.Errorf("%d paid + %d refused != %d payments", r.Paid, r.Refused, r.PlannedOnTime+r.PlannedLate)
	}
	if len(r.CancelAfter) != r.Cancelled {
		t.Errorf("%d cancellation times for %d cancelled orders", len(r.CancelAfter), r.Cancelled)
	}
	for _, d := range r.CancelAfter {
		if d < cfg.PayWithin {
			t.Fatalf("an order was cancelled %v after placement, before %v", d, cfg.PayWithin)
		}
	}
	s := r.Stats
	if s.Scheduled != uint64(cfg.Orders) || s.Cancelled != uint64(r.Paid) || s.Expired != uint64(r.Cancelled) {
		t.Errorf("timer stats %+v: want %d scheduled, %d cancelled, %d expired", s, cfg.Orders, r.Paid, r.Cancelled)
	}

	var out bytes.Buffer
	r.print(&out, cfg)
	for _, want := range []string{"cancelled twice: 0", "both paid and cancelled: 0", "missed (unpaid, still open): 0", "ok: every order paid or cancelled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDelayedOrderCheckCatchesFailures(t *testing.T) {
	good := report{Orders: 3, PlannedNot: 1, Paid: 2, Cancelled: 1}
	if err := good.check(); err != nil {
		t.Fatalf("check rejected a good report: %v", err)
	}
	for _, mod := range []func(*report){
		func(r *report) { r.Open, r.Cancelled = 1, 0 },
		func(r *report) { r.CancelledTwice = 1 },
		func(r *report) { r.Conflicts = 1 },
		func(r *report) { r.CancelledEarly = 1 },
		func(r *report) { r.Leftover = 1 },
		func(r *report) { r.PlannedNot = 2 },
	} {
		r := good
		mod(&r)
		if r.check() == nil {
			t.Errorf("check accepted %+v", r)
		}
	}
}

func TestDelayedOrderStopsWithContext(t *testing.T) {
	cfg := defaultConfig()
	cfg.Orders = 10
	cfg.Scale = 1 // real time: would take an hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := run(ctx, cfg); err == nil {
		t.Fatal("run did not stop with its context")
	}
}
