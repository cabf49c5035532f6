package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver: SQLite in pure Go, no cgo
)

// Status is where an order stands. It starts Pending and changes once, to
// Paid or Cancelled, by a conditional UPDATE: the database decides which of
// a payment and a cancellation wins.
type Status string

// The statuses of an order.
const (
	Pending   Status = "pending"
	Paid      Status = "paid"
	Cancelled Status = "cancelled"
)

// Errors of Store and Service, usable with errors.Is.
var (
	ErrNotFound       = errors.New("delayedorder: no such order")
	ErrOrderCancelled = errors.New("delayedorder: order already cancelled for non-payment")
	ErrAlreadyPaid    = errors.New("delayedorder: order already paid")
)

// Order is a row of the orders table. Times are the wall clock of the
// process that wrote them, in milliseconds.
type Order struct {
	ID       int64
	Created  time.Time
	Deadline time.Time // an unpaid order is cancelled at this time, never before
	Status   Status
	Settled  time.Time // when it was paid or cancelled; zero while pending
}

// schema creates the tables if they are missing. cancellations is
// append-only: the cancelling transaction adds its row, so a committed
// cancellation has exactly one, which is what the rest of a shop (stock,
// e-mail) would read, and what the tests count.
const schema = `
CREATE TABLE IF NOT EXISTS orders (
	id          INTEGER PRIMARY KEY,
	created_ms  INTEGER NOT NULL,
	deadline_ms INTEGER NOT NULL,
	status      TEXT    NOT NULL DEFAULT 'pending'
	            CHECK (status IN ('pending', 'paid', 'cancelled')),
	settled_ms  INTEGER
);
CREATE INDEX IF NOT EXISTS orders_pending_by_deadline
	ON orders (deadline_ms) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS cancellations (
	order_id     INTEGER NOT NULL REFERENCES orders (id),
	cancelled_ms INTEGER NOT NULL
);
`

// Store keeps the orders in an SQLite database file. It is the truth: an
// order is pending, paid or cancelled when the database says so, whatever
// any process holds in memory.
type Store struct {
	db *sql.DB
}

// OpenStore opens (or creates) the database file at path.
//
// The database is in WAL mode: a commit is in the file when it returns, so
// a process killed at any point loses no committed order, and a half-done
// transaction is rolled back when the file is next opened. One connection:
// SQLite lets one writer in at a time anyway, and database/sql queues the
// callers instead of letting them fail with SQLITE_BUSY.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("delayedorder: empty database path")
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("delayedorder: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("delayedorder: create tables in %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Create adds a pending order placed at now, to be cancelled at deadline
// unless paid.
func (s *Store) Create(ctx context.Context, now, deadline time.Time) (Order, error) {
	if !deadline.After(now) {
		return Order{}, fmt.Errorf("delayedorder: deadline %v is not after creation %v", deadline, now)
	}
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO orders (created_ms, deadline_ms) VALUES (?, ?)`, now.UnixMilli(), deadline.UnixMilli())
	if err != nil {
		return Order{}, fmt.Errorf("delayedorder: create order: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Order{}, fmt.Errorf("delayedorder: create order: %w", err)
	}
	return Order{ID: id, Created: fromMilli(now.UnixMilli()), Deadline: fromMilli(deadline.UnixMilli()), Status: Pending}, nil
}

// Pay marks a pending order paid at now. It fails with ErrOrderCancelled
// if the order was cancelled first, ErrAlreadyPaid if it was paid, and
// ErrNotFound if there is no such order.
func (s *Store) Pay(ctx context.Context, id int64, now time.Time) (Order, error) {
	res, err := s.db.ExecContext(ctx,
		`UPDATE orders SET status = 'paid', settled_ms = ? WHERE id = ? AND status = 'pending'`,
		now.UnixMilli(), id)
	if err != nil {
		return Order{}, fmt.Errorf("delayedorder: pay order %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Order{}, fmt.Errorf("delayedorder: pay order %d: %w", id, err)
	} else if n == 1 {
		return s.Get(ctx, id)
	}
	return payRefused(s.Get(ctx, id))
}

// payRefused is the error of a payment that found the order no longer
// pending, from the order read after it: its status is final, so that read
// is stable.
func payRefused(o Order, err error) (Order, error) {
	switch {
	case err != nil:
		return Order{}, err
	case o.Status == Cancelled:
		return o, fmt.Errorf("order %d: %w", o.ID, ErrOrderCancelled)
	default:
		return o, fmt.Errorf("order %d: %w", o.ID, ErrAlreadyPaid)
	}
}

// Cancel cancels the order if it is still pending and its deadline is at or
// before now, and appends its row to cancellations in the same transaction.
// It reports whether this call cancelled it, and the order as it stands:
// still Pending means now is before the deadline (the wall clock stepped
// back since the order was armed), and the caller arms it again.
//
// The WHERE clause makes the cancellation commit at most once however many
// processes or timeouts try, never after a payment, and never before the
// deadline on the clock that now was read from.
func (s *Store) Cancel(ctx context.Context, id int64, now time.Time) (o Order, cancelled bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Order{}, false, fmt.Errorf("delayedorder: cancel order %d: %w", id, err)
	}
	defer tx.Rollback() // a no-op once committed
	ms := now.UnixMilli()
	res, err := tx.ExecContext(ctx,
		`UPDATE orders SET status = 'cancelled', settled_ms = ?
		 WHERE id = ? AND status = 'pending' AND deadline_ms <= ?`, ms, id, ms)
	if err != nil {
		return Order{}, false, fmt.Errorf("delayedorder: cancel order %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Order{}, false, fmt.Errorf("delayedorder: cancel order %d: %w", id, err)
	}
	if n == 1 {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO cancellations (order_id, cancelled_ms) VALUES (?, ?)`, id, ms); err != nil {
			return Order{}, false, fmt.Errorf("delayedorder: cancel order %d: %w", id, err)
		}
	}
	o, err = get(ctx, tx, id)
	if err != nil {
		return Order{}, false, err
	}
	if err := tx.Commit(); err != nil {
		return Order{}, false, fmt.Errorf("delayedorder: cancel order %d: %w", id, err)
	}
	return o, n == 1, nil
}

// Get returns the order with the given id, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (Order, error) {
	return get(ctx, s.db, id)
}

// Pending returns every pending order, earliest deadline first.
func (s *Store) Pending(ctx context.Context) ([]Order, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT id, created_ms, deadline_ms, status, settled_ms FROM orders
		 WHERE status = 'pending' ORDER BY deadline_ms, id`)
	if err != nil {
		return nil, fmt.Errorf("delayedorder: list pending orders: %w", err)
	}
	defer rows.Close()
	var orders []Order
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, err
		}
		orders = append(orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("delayedorder: list pending orders: %w", err)
	}
	return orders, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func get(ctx context.Context, q querier, id int64) (Order, error) {
	o, err := scanOrder(q.QueryRowContext(ctx,
		`SELECT id, created_ms, deadline_ms, status, settled_ms FROM orders WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, fmt.Errorf("order %d: %w", id, ErrNotFound)
	}
	return o, err
}

func scanOrder(row interface{ Scan(...any) error }) (Order, error) {
	var (
		o                 Order
		created, deadline int64
		settled           sql.NullInt64
	)
	if err := row.Scan(&o.ID, &created, &deadline, &o.Status, &settled); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Order{}, err
		}
		return Order{}, fmt.Errorf("delayedorder: read order: %w", err)
	}
	o.Created, o.Deadline = fromMilli(created), fromMilli(deadline)
	if settled.Valid {
		o.Settled = fromMilli(settled.Int64)
	}
	return o, nil
}

func fromMilli(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
