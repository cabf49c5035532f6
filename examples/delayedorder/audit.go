package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Audit is what the database says about every order it holds.
type Audit struct {
	Orders, Pending, Paid, Cancelled int

	// Each must be zero.
	CancelledTwice   int // orders with more than one cancellations row
	CancelledNoRow   int // cancelled orders without a cancellations row
	RowNotCancelled  int // cancellations rows of orders that are not cancelled
	CancelledEarly   int // orders cancelled before their deadline
	PendingOverdue   int // orders still pending a grace period after their deadline
	CancelLatenesses []time.Duration
}

// Audit reads every order and every cancellation. An order still pending at
// now whose deadline is more than grace before now counts as missed.
func (s *Store) Audit(ctx context.Context, now time.Time, grace time.Duration) (Audit, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT o.status, o.deadline_ms, count(c.order_id), coalesce(min(c.cancelled_ms), o.settled_ms, 0)
		FROM orders o LEFT JOIN cancellations c ON c.order_id = o.id
		GROUP BY o.id`)
	if err != nil {
		return Audit{}, fmt.Errorf("delayedorder: audit: %w", err)
	}
	defer rows.Close()
	return audit(rows, now.UnixMilli(), grace, time.Millisecond)
}

// auditRows are the rows of an audit query, from database/sql or pgx: per
// order its status, deadline, number of cancellations rows and the time of
// the first (else of its settlement, else 0), times in a unit since the
// epoch.
type auditRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// audit checks each order's rows; now and the times are in unit.
func audit(rows auditRows, now int64, grace, unit time.Duration) (Audit, error) {
	var a Audit
	for rows.Next() {
		var (
			status          Status
			deadline, first int64
			cancellations   int
		)
		if err := rows.Scan(&status, &deadline, &cancellations, &first); err != nil {
			return Audit{}, fmt.Errorf("delayedorder: audit: %w", err)
		}
		a.Orders++
		switch status {
		case Pending:
			a.Pending++
			if time.Duration(now-deadline)*unit > grace {
				a.PendingOverdue++
			}
		case Paid:
			a.Paid++
		case Cancelled:
			a.Cancelled++
			if first < deadline {
				a.CancelledEarly++
			}
			a.CancelLatenesses = append(a.CancelLatenesses, time.Duration(first-deadline)*unit)
		}
		switch {
		case cancellations > 1:
			a.CancelledTwice++
		case cancellations == 0 && status == Cancelled:
			a.CancelledNoRow++
		case cancellations > 0 && status != Cancelled:
			a.RowNotCancelled++
		}
	}
	if err := rows.Err(); err != nil {
		return Audit{}, fmt.Errorf("delayedorder: audit: %w", err)
	}
	slices.Sort(a.CancelLatenesses)
	return a, nil
}

// Err reports every broken rule, or nil.
func (a Audit) Err() error {
	var errs []error
	for _, c := range []struct {
		n    int
		what string
	}{
		{a.CancelledTwice, "cancelled more than once"},
		{a.CancelledNoRow, "cancelled without a cancellations row"},
		{a.RowNotCancelled, "with a cancellations row but not cancelled"},
		{a.CancelledEarly, "cancelled before their deadline"},
		{a.PendingOverdue, "still pending well after their deadline (missed)"},
	} {
		if c.n != 0 {
			errs = append(errs, fmt.Errorf("%d orders %s", c.n, c.what))
		}
	}
	if a.Pending+a.Paid+a.Cancelled != a.Orders {
		errs = append(errs, fmt.Errorf("%d pending + %d paid + %d cancelled != %d orders", a.Pending, a.Paid, a.Cancelled, a.Orders))
	}
	return errors.Join(errs...)
}
