package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is the time the tests' orders are placed at.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// openStore opens a new database in the test's directory, closed at the end.
func openStore(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "orders.db")
	s, err := OpenStore(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, path
}

// cancellationRows returns the order's rows in the append-only cancellations table.
func cancellationRows(t *testing.T, s *Store, id int64) []time.Time {
	t.Helper()
	rows, err := s.db.Query(`SELECT cancelled_ms FROM cancellations WHERE order_id = ?`, id)
	require.NoError(t, err)
	defer rows.Close()
	var at []time.Time
	for rows.Next() {
		var ms int64
		require.NoError(t, rows.Scan(&ms))
		at = append(at, fromMilli(ms))
	}
	require.NoError(t, rows.Err())
	return at
}

func TestStoreCancelsOnlyPendingOrdersThatAreDue(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	o, err := s.Create(ctx, t0, t0.Add(30*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, Pending, o.Status)

	got, cancelled, err := s.Cancel(ctx, o.ID, o.Deadline.Add(-time.Millisecond))
	require.NoError(t, err)
	assert.False(t, cancelled, "a millisecond before the deadline")
	assert.Equal(t, Pending, got.Status)
	assert.Equal(t, o.Deadline, got.Deadline)

	got, cancelled, err = s.Cancel(ctx, o.ID, o.Deadline)
	require.NoError(t, err)
	assert.True(t, cancelled, "at the deadline")
	assert.Equal(t, Cancelled, got.Status)
	assert.Equal(t, o.Deadline, got.Settled)

	got, cancelled, err = s.Cancel(ctx, o.ID, o.Deadline.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, cancelled, "a second cancellation does not commit")
	assert.Equal(t, o.Deadline, got.Settled, "the first cancellation's time stays")
	assert.Equal(t, []time.Time{o.Deadline}, cancellationRows(t, s, o.ID))

	_, err = s.Pay(ctx, o.ID, o.Deadline.Add(time.Second))
	require.ErrorIs(t, err, ErrOrderCancelled)
}

func TestStoreNeverCancelsAPaidOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	o, err := s.Create(ctx, t0, t0.Add(time.Minute))
	require.NoError(t, err)
	paid, err := s.Pay(ctx, o.ID, t0.Add(59*time.Second))
	require.NoError(t, err)
	assert.Equal(t, Paid, paid.Status)
	assert.Equal(t, t0.Add(59*time.Second), paid.Settled)

	got, cancelled, err := s.Cancel(ctx, o.ID, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, cancelled)
	assert.Equal(t, Paid, got.Status)
	assert.Empty(t, cancellationRows(t, s, o.ID))

	_, err = s.Pay(ctx, o.ID, t0.Add(time.Hour))
	require.ErrorIs(t, err, ErrAlreadyPaid)
}

func TestStoreRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	_, err := s.Create(ctx, t0, t0)
	require.Error(t, err, "a deadline that is not after creation")
	_, err = s.Pay(ctx, 42, t0)
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = s.Cancel(ctx, 42, t0)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Get(ctx, 42)
	require.ErrorIs(t, err, ErrNotFound)
	pending, err := s.Pending(ctx)
	require.NoError(t, err)
	assert.Empty(t, pending, "failed calls stored nothing")

	_, err = OpenStore(ctx, "")
	require.Error(t, err)
	_, err = OpenStore(ctx, filepath.Join(t.TempDir(), "missing-dir", "orders.db"))
	require.Error(t, err)
}

func TestStoreKeepsOrdersAcrossReopening(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	late, err := s.Create(ctx, t0, t0.Add(2*time.Hour))
	require.NoError(t, err)
	early, err := s.Create(ctx, t0, t0.Add(time.Hour))
	require.NoError(t, err)
	paid, err := s.Create(ctx, t0, t0.Add(time.Hour))
	require.NoError(t, err)
	_, err = s.Pay(ctx, paid.ID, t0)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s2, err := OpenStore(ctx, path)
	require.NoError(t, err)
	defer s2.Close()
	pending, err := s2.Pending(ctx)
	require.NoError(t, err)
	assert.Equal(t, []Order{early, late}, pending, "pending orders, earliest deadline first")
}

func TestAuditFindsEveryBrokenRule(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	a, err := s.Audit(ctx, t0, 0)
	require.NoError(t, err)
	require.NoError(t, a.Err(), "an empty database is consistent")

	// One order per broken rule, written behind the Store's back.
	for _, q := range []string{
		`INSERT INTO orders VALUES (1, 0, 1000, 'cancelled', 1000)`, // no cancellations row
		`INSERT INTO orders VALUES (2, 0, 1000, 'cancelled', 1000)`, // two rows
		`INSERT INTO cancellations VALUES (2, 1000), (2, 2000)`,
		`INSERT INTO orders VALUES (3, 0, 1000, 'paid', 500)`, // a row, but paid
		`INSERT INTO cancellations VALUES (3, 1000)`,
		`INSERT INTO orders VALUES (4, 0, 1000, 'cancelled', 999)`, // early
		`INSERT INTO cancellations VALUES (4, 999)`,
		`INSERT INTO orders VALUES (5, 0, 1000, 'pending', NULL)`, // missed
	} {
		_, err := s.db.Exec(q)
		require.NoError(t, err, q)
	}
	a, err = s.Audit(ctx, time.UnixMilli(1000).Add(time.Minute), time.Second)
	require.NoError(t, err)
	assert.Equal(t, Audit{
		Orders: 5, Pending: 1, Paid: 1, Cancelled: 3,
		CancelledTwice: 1, CancelledNoRow: 1, RowNotCancelled: 1, CancelledEarly: 1, PendingOverdue: 1,
		CancelLatenesses: []time.Duration{-time.Millisecond, 0, 0},
	}, a)
	err = a.Err()
	for _, want := range []string{"more than once", "without a cancellations row", "but not cancelled", "before their deadline", "missed"} {
		assert.ErrorContains(t, err, want)
	}

	a, err = s.Audit(ctx, time.UnixMilli(1000).Add(time.Second), time.Second)
	require.NoError(t, err)
	assert.Zero(t, a.PendingOverdue, "within the grace period a pending order is not missed")
}
