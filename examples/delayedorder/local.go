package main

import (
	"context"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
)

// LocalOrders is a Store as the Orders of a process that is its only
// replica: it holds every order, reads the time on its own clock, and has
// no one to listen to.
type LocalOrders struct {
	store *Store
	clock clock.Clock
}

// Orders returns the store as the Orders of a Service, reading the time on
// clk, the service's clock.
func (s *Store) Orders(clk clock.Clock) *LocalOrders { return &LocalOrders{store: s, clock: clk} }

func (l *LocalOrders) Create(ctx context.Context, payWithin time.Duration) (Order, bool, error) {
	now := l.clock.Now()
	o, err := l.store.Create(ctx, now, now.Add(payWithin))
	return o, err == nil, err
}

func (l *LocalOrders) Pay(ctx context.Context, id int64) (Order, error) {
	return l.store.Pay(ctx, id, l.clock.Now())
}

func (l *LocalOrders) Cancel(ctx context.Context, id int64) (Cancellation, error) {
	now := l.clock.Now()
	o, cancelled, err := l.store.Cancel(ctx, id, now)
	if err != nil {
		return Cancellation{}, err
	}
	c := Cancellation{Order: o, Cancelled: cancelled}
	if o.Status == Pending { // not due at now: its deadline is after it
		c.DueIn = o.Deadline.Sub(now)
	}
	return c, nil
}

// Claim, with recover, takes every pending order: this process holds
// them all. Those due are cancelled; one that is not, on a wall clock
// stepped back, is armed again. Without recover it finds nothing: every
// order is armed when it is made.
func (l *LocalOrders) Claim(ctx context.Context, recover bool) (Claimed, error) {
	if !recover {
		return Claimed{Never: true}, nil
	}
	pending, err := l.store.Pending(ctx)
	if err != nil {
		return Claimed{}, err
	}
	c := Claimed{Never: true}
	for _, o := range pending {
		now := l.clock.Now()
		if o.Deadline.After(now) {
			c.Claims = append(c.Claims, Claim{ID: o.ID, DueIn: o.Deadline.Sub(now), Mine: true})
			continue
		}
		got, cancelled, err := l.store.Cancel(ctx, o.ID, now)
		switch {
		case err != nil:
			return Claimed{}, err
		case cancelled:
			c.Cancelled = append(c.Cancelled, got)
		case got.Status == Pending: // the clock stepped back since the check
			c.Claims = append(c.Claims, Claim{ID: o.ID, DueIn: got.Deadline.Sub(now), Mine: true})
		}
	}
	return c, nil
}

// Listen returns at once: there is no other replica.
func (l *LocalOrders) Listen(context.Context, Listener) (func(), error) { return func() {}, nil }

// Audit reads every order and every cancellation, at the clock's now.
func (l *LocalOrders) Audit(ctx context.Context, grace time.Duration) (Audit, error) {
	return l.store.Audit(ctx, l.clock.Now(), grace)
}

// Unsettled counts the pending orders, and says how long the last of them
// has to its deadline.
func (l *LocalOrders) Unsettled(ctx context.Context) (int, time.Duration, error) {
	pending, err := l.store.Pending(ctx)
	if err != nil || len(pending) == 0 {
		return 0, 0, err
	}
	return len(pending), pending[len(pending)-1].Deadline.Sub(l.clock.Now()), nil
}

// Close closes the store.
func (l *LocalOrders) Close() error { return l.store.Close() }
