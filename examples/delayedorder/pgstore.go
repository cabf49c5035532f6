package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGStore keeps the orders in a PostgreSQL database that the replicas of
// the shop share. Each order is held by at most one replica at a time,
// named in its claimed_by column: the one that arms it on its wheel and
// cancels it. A replica claims the orders due within its window, and its
// claim is a lease that runs until a lease period after the deadline:
// a replica that is alive cancels the order at its deadline, long before
// that; one that died (killed, partitioned, stalled) has its orders
// taken over by another once their leases run out. A cancellation is a
// conditional UPDATE that checks the order is still pending, due and held
// by the replica that asks, so it commits once, whoever tries, never after
// a payment and never before the deadline. Deadlines and leases are on
// the server's clock (now()): the replicas' clocks are never compared.
//
// The replicas tell each other, with NOTIFY on the channel pgChannel, when
// a claim may find the orders they made (pgannounce.go: when one may be
// claimed, or when its holder's lease runs out) and of each payment (to
// the replica holding the order, which disarms it). That spares the
// polling: a replica touches the database when an order is made, paid,
// claimed or cancelled, and not otherwise. A payment not heard of is found
// by the cancellation, which then does not commit, and a replica that
// reconnects claims at once.
type PGStore struct {
	pool      *pgxpool.Pool
	listenCfg *pgx.ConnConfig // the connection Listen makes, outside the pool
	replica   string
	cfg       pgConfig
	log       *slog.Logger
	announced announcer // of the orders this replica made
	heard     floors    // of the other replicas' announcements, and its own
}

// pgChannel is the channel of the replicas' notifications.
const pgChannel = "delayedorder"

type pgConfig struct {
	window, lease, retry time.Duration
	maxClaim             int
	logger               *slog.Logger
}

// PGOption configures a PGStore.
type PGOption func(*pgConfig)

// WithWindow sets how far ahead a replica claims orders: a claim takes the
// orders due within the window that no replica holds, and comes when the
// earliest of them is half a window from its deadline. An order made with
// no more than the window to pay is held by the replica that made it.
// Default 1 minute.
func WithWindow(d time.Duration) PGOption { return func(c *pgConfig) { c.window = d } }

// WithLease sets how long after an order's deadline its holder's claim
// lasts: a replica that has not cancelled the order by then is taken for
// dead, and another takes the order over. It bounds how late an order held
// by a replica that died is cancelled. Default 10 seconds.
func WithLease(d time.Duration) PGOption { return func(c *pgConfig) { c.lease = d } }

// WithStoreLogger sets the logger of the listening connection's troubles.
// Default slog.Default().
func WithStoreLogger(l *slog.Logger) PGOption { return func(c *pgConfig) { c.logger = l } }

// replicaName is what a replica may be called: it is written in the
// orders it holds and in the notifications.
var replicaName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,40}$`)

// OpenPGStore connects to the database at url (postgres://...) as the
// replica named replica, and creates the tables if they are missing. Each
// replica has a name of its own, kept across its restarts, so that a
// replica that comes back takes up the orders it held.
func OpenPGStore(ctx context.Context, url, replica string, opts ...PGOption) (*PGStore, error) {
	cfg := pgConfig{
		window:   time.Minute,
		lease:    10 * time.Second,
		retry:    time.Second,
		maxClaim: 10000,
		logger:   slog.Default(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case !replicaName.MatchString(replica):
		return nil, fmt.Errorf("delayedorder: replica name %q: want 1 to 40 letters, digits, '_', '.' or '-'", replica)
	case cfg.window <= 0 || cfg.lease <= 0:
		return nil, fmt.Errorf("delayedorder: window %v and lease %v must be positive", cfg.window, cfg.lease)
	case cfg.logger == nil:
		return nil, errors.New("delayedorder: nil logger")
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("delayedorder: database URL: %w", err)
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "delayedorder " + replica
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("delayedorder: connect: %w", err)
	}
	s := &PGStore{pool: pool, listenCfg: pcfg.ConnConfig.Copy(), replica: replica, cfg: cfg, log: cfg.logger}
	if err := s.createTables(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// pgSchema creates the tables if they are missing. cancellations is
// append-only, as in the SQLite schema, and names the replica that
// cancelled. A claim is claimed_by and lease_until together. The partial
// indexes hold pending orders only, those no replica holds (for the claims
// of fresh orders) and those one does (for leases run out, and the orders
// a replica holds when it restarts): their size is the orders pending,
// whatever the history.
const pgSchema = `
CREATE TABLE IF NOT EXISTS orders (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	created_at  timestamptz NOT NULL,
	deadline    timestamptz NOT NULL,
	status      text NOT NULL DEFAULT 'pending'
	            CHECK (status IN ('pending', 'paid', 'cancelled')),
	settled_at  timestamptz,
	claimed_by  text,
	lease_until timestamptz,
	CHECK ((claimed_by IS NULL) = (lease_until IS NULL))
);
CREATE INDEX IF NOT EXISTS orders_unclaimed ON orders (deadline)
	WHERE status = 'pending' AND claimed_by IS NULL;
CREATE INDEX IF NOT EXISTS orders_leases ON orders (lease_until)
	WHERE status = 'pending' AND claimed_by IS NOT NULL;
CREATE TABLE IF NOT EXISTS cancellations (
	order_id     bigint NOT NULL REFERENCES orders (id),
	cancelled_at timestamptz NOT NULL,
	cancelled_by text NOT NULL
);
`

// createTables runs pgSchema under a lock, as replicas starting together
// would otherwise race to create the same table.
func (s *PGStore) createTables(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('delayedorder schema'))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, pgSchema)
		return err
	})
	if err != nil {
		return fmt.Errorf("delayedorder: create tables: %w", err)
	}
	return nil
}

// Close closes the connections.
func (s *PGStore) Close() error {
	s.pool.Close()
	return nil
}

// Replica is the name of the replica this store is opened for.
func (s *PGStore) Replica() string { return s.replica }

// micros is the SQL of an interval in microseconds, as a bigint.
func micros(interval string) string {
	return "ceil(extract(epoch FROM " + interval + ") * 1000000)::int8"
}

// until is the SQL of the microseconds from now to the time ts, as a
// replica arms it: now on the server's clock as the statement ends
// (clock_timestamp), not as it started (now()), so that a slow statement
// does not make the replica late.
func until(ts string) string { return micros(ts + " - clock_timestamp()") }

// μs is d in microseconds, the unit of the durations given to SQL.
func μs(d time.Duration) int64 { return d.Microseconds() }

// fromMicros is a duration read from SQL.
func fromMicros(n int64) time.Duration { return time.Duration(n) * time.Microsecond }

// Create stores a pending order due payWithin from now, held by this
// replica if payWithin is within its window, and announces when it may be
// claimed unless an announcement covers it.
func (s *PGStore) Create(ctx context.Context, payWithin time.Duration) (Order, bool, error) {
	if payWithin <= 0 {
		return Order{}, false, fmt.Errorf("delayedorder: pay-within %v is not positive", payWithin)
	}
	held := payWithin <= s.cfg.window
	kind, in := fresh, payWithin // claimable half a window before its deadline
	at := time.Now().Add(payWithin - s.cfg.window/2)
	if held {
		kind, in = lease, payWithin+s.cfg.lease // to be taken over when the lease runs out
		at = time.Now().Add(in)
	}
	notice := s.announced.notice(kind, s.replica, in, at)
	var o Order
	err := s.pool.QueryRow(ctx, `
		WITH o AS (
			INSERT INTO orders (created_at, deadline, claimed_by, lease_until)
			VALUES (now(), now() + $1::int8 * interval '1 microsecond',
			        CASE WHEN $2::bool THEN $3::text END,
			        CASE WHEN $2::bool THEN now() + ($1::int8 + $4::int8) * interval '1 microsecond' END)
			RETURNING id, created_at, deadline)
		SELECT id, created_at, deadline, CASE WHEN $6::text <> '' THEN pg_notify($5, $6) END FROM o`,
		μs(payWithin), held, s.replica, μs(s.cfg.lease), pgChannel, notice,
	).Scan(&o.ID, &o.Created, &o.Deadline, nil)
	if err != nil {
		return Order{}, false, fmt.Errorf("delayedorder: create order: %w", err)
	}
	if notice != "" {
		s.announced.sent(kind, at)
	}
	o.Created, o.Deadline, o.Status = o.Created.UTC(), o.Deadline.UTC(), Pending
	return o, held, nil
}

// Pay marks a pending order paid and, in the same statement, tells the
// replica holding it, if another, to disarm it.
func (s *PGStore) Pay(ctx context.Context, id int64) (Order, error) {
	rows, err := s.pool.Query(ctx, `
		WITH p AS (
			UPDATE orders SET status = 'paid', settled_at = now()
			WHERE id = $1 AND status = 'pending'
			RETURNING id, created_at, deadline, status, settled_at, claimed_by)
		SELECT id, created_at, deadline, status, settled_at,
		       CASE WHEN claimed_by <> $2 THEN pg_notify($3, 'paid ' || claimed_by || ' ' || id) END
		FROM p`, id, s.replica, pgChannel)
	if err != nil {
		return Order{}, fmt.Errorf("delayedorder: pay order %d: %w", id, err)
	}
	orders, err := pgx.CollectRows(rows, scanPGOrder)
	switch {
	case err != nil:
		return Order{}, fmt.Errorf("delayedorder: pay order %d: %w", id, err)
	case len(orders) == 1:
		return orders[0], nil
	}
	return payRefused(s.Get(ctx, id))
}

// Cancel cancels the order, with its cancellations row, if it is pending,
// due and held by this replica, all in one statement: one transaction.
// The order comes back as the statement found it otherwise; if it is
// pending and held here but not due, DueIn says for how long.
func (s *PGStore) Cancel(ctx context.Context, id int64) (Cancellation, error) {
	var (
		c       Cancellation
		dueIn   int64
		settled *time.Time
	)
	err := s.pool.QueryRow(ctx, `
		WITH c AS (
			UPDATE orders SET status = 'cancelled', settled_at = now()
			WHERE id = $1 AND status = 'pending' AND claimed_by = $2 AND deadline <= now()
			RETURNING id, settled_at),
		r AS (
			INSERT INTO cancellations (order_id, cancelled_at, cancelled_by)
			SELECT id, settled_at, $2 FROM c)
		SELECT o.id, o.created_at, o.deadline,
		       CASE WHEN c.id IS NULL THEN o.status ELSE 'cancelled' END,
		       coalesce(c.settled_at, o.settled_at),
		       c.id IS NOT NULL,
		       CASE WHEN c.id IS NULL AND o.status = 'pending' AND o.claimed_by = $2
		            THEN greatest(`+until("o.deadline")+`, 0) ELSE 0 END
		FROM orders o LEFT JOIN c ON c.id = o.id
		WHERE o.id = $1`, id, s.replica,
	).Scan(&c.Order.ID, &c.Order.Created, &c.Order.Deadline, &c.Order.Status, &settled, &c.Cancelled, &dueIn)
	if errors.Is(err, pgx.ErrNoRows) {
		return Cancellation{}, fmt.Errorf("order %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Cancellation{}, fmt.Errorf("delayedorder: cancel order %d: %w", id, err)
	}
	c.Order.Created, c.Order.Deadline, c.DueIn = c.Order.Created.UTC(), c.Order.Deadline.UTC(), fromMicros(dueIn)
	if settled != nil {
		c.Order.Settled = settled.UTC()
	}
	return c, nil
}

// Claim takes, in one statement, the pending orders no replica holds that
// are due within the window, those whose holder's lease has run out and,
// with recover, those this replica holds, skipping the rows another
// replica's claim has locked; it cancels those already due, with their
// cancellations rows. The lease runs until a lease period after the
// deadline, or after now for an order already due. Next is when a claim
// may find more: about half a window before the earliest deadline of the
// orders no replica holds (freshIn), when the earliest lease of another
// replica runs out, or at the earliest announcement heard that no claim
// has met yet.
func (s *PGStore) Claim(ctx context.Context, recover bool) (Claimed, error) {
	start := time.Now()
	rows, err := s.pool.Query(ctx, `
		WITH held AS (
			SELECT id FROM orders
			WHERE $5::bool AND status = 'pending' AND claimed_by = $1
			FOR UPDATE SKIP LOCKED),
		fresh AS (
			SELECT id FROM orders
			WHERE status = 'pending' AND claimed_by IS NULL
			  AND deadline <= now() + $2::int8 * interval '1 microsecond'
			ORDER BY deadline LIMIT $4 FOR UPDATE SKIP LOCKED),
		expired AS (
			SELECT id FROM orders
			WHERE status = 'pending' AND claimed_by <> $1 AND lease_until <= now()
			ORDER BY lease_until LIMIT $4 FOR UPDATE SKIP LOCKED),
		c AS (
			UPDATE orders o
			SET claimed_by = $1,
			    lease_until = greatest(o.deadline, now()) + $3::int8 * interval '1 microsecond',
			    status = CASE WHEN o.deadline <= now() THEN 'cancelled' ELSE o.status END,
			    settled_at = CASE WHEN o.deadline <= now() THEN now() END
			WHERE o.id = ANY (ARRAY(SELECT id FROM held UNION ALL SELECT id FROM fresh UNION ALL SELECT id FROM expired))
			RETURNING o.id, o.created_at, o.deadline, o.status, o.settled_at),
		r AS (
			INSERT INTO cancellations (order_id, cancelled_at, cancelled_by)
			SELECT id, settled_at, $1 FROM c WHERE status = 'cancelled')
		SELECT c.id, c.created_at, c.deadline, c.status, c.settled_at,
		       c.id IN (SELECT id FROM held), `+until("c.deadline")+`,
		       `+until(`(SELECT min(deadline) FROM orders
		           WHERE status = 'pending' AND claimed_by IS NULL AND id NOT IN (SELECT id FROM c))`)+`,
		       `+until(`(SELECT min(lease_until) FROM orders
		           WHERE status = 'pending' AND claimed_by <> $1 AND id NOT IN (SELECT id FROM c))`)+`
		FROM (VALUES (1)) AS one LEFT JOIN c ON true`,
		s.replica, μs(s.cfg.window), μs(s.cfg.lease), s.cfg.maxClaim, recover)
	if err != nil {
		return Claimed{}, fmt.Errorf("delayedorder: claim orders: %w", err)
	}
	var (
		c            Claimed
		fresh, lease *int64
	)
	for rows.Next() {
		var (
			id, dueIn         *int64
			created, deadline *time.Time
			settled           *time.Time
			status            *Status
			mine              *bool
		)
		if err := rows.Scan(&id, &created, &deadline, &status, &settled, &mine, &dueIn, &fresh, &lease); err != nil {
			rows.Close()
			return Claimed{}, fmt.Errorf("delayedorder: claim orders: %w", err)
		}
		switch {
		case id == nil: // nothing taken: the row is for the next claim only
		case *status == Cancelled:
			c.Cancelled = append(c.Cancelled, Order{ID: *id, Created: created.UTC(), Deadline: deadline.UTC(),
				Status: Cancelled, Settled: settled.UTC()})
		default:
			c.Claims = append(c.Claims, Claim{ID: *id, DueIn: fromMicros(*dueIn), Mine: *mine})
		}
	}
	if err := rows.Err(); err != nil {
		return Claimed{}, fmt.Errorf("delayedorder: claim orders: %w", err)
	}
	var next []time.Duration
	if fresh != nil {
		next = append(next, s.freshIn(fromMicros(*fresh)))
	}
	if lease != nil {
		next = append(next, fromMicros(*lease))
	}
	if floor, ok := s.heard.claimed(start); ok {
		next = append(next, floor)
	}
	if len(c.Claims)+len(c.Cancelled) >= s.cfg.maxClaim {
		next = append(next, 0) // more than a claim takes: at once
	}
	if len(next) == 0 {
		c.Never = true
	} else {
		c.Next = slices.Min(next)
	}
	return c, nil
}

// freshIn is when to claim an order that no replica holds, due in dueIn:
// when it is due within half a window, plus a random part of a quarter
// window, so that the replicas, which all hear of it, do not all claim
// at once: the first takes the orders due within the window, and the
// others find nothing to fight over.
func (s *PGStore) freshIn(dueIn time.Duration) time.Duration {
	return dueIn - s.cfg.window/2 + rand.N(s.cfg.window/4+1)
}

// Get returns the order with the given id, or ErrNotFound.
func (s *PGStore) Get(ctx context.Context, id int64) (Order, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT id, created_at, deadline, status, settled_at, NULL FROM orders WHERE id = $1`, id)
	if err != nil {
		return Order{}, fmt.Errorf("delayedorder: read order %d: %w", id, err)
	}
	o, err := pgx.CollectExactlyOneRow(rows, scanPGOrder)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Order{}, fmt.Errorf("order %d: %w", id, ErrNotFound)
	case err != nil:
		return Order{}, fmt.Errorf("delayedorder: read order %d: %w", id, err)
	}
	return o, nil
}

// scanPGOrder reads id, created_at, deadline, status, settled_at and a
// column it skips (a notification sent, or NULL).
func scanPGOrder(row pgx.CollectableRow) (Order, error) {
	var (
		o       Order
		settled *time.Time
	)
	if err := row.Scan(&o.ID, &o.Created, &o.Deadline, &o.Status, &settled, nil); err != nil {
		return Order{}, err
	}
	o.Created, o.Deadline = o.Created.UTC(), o.Deadline.UTC()
	if settled != nil {
		o.Settled = settled.UTC()
	}
	return o, nil
}

// Audit reads every order and every cancellation, at the server's now.
func (s *PGStore) Audit(ctx context.Context, grace time.Duration) (Audit, error) {
	var now int64
	if err := s.pool.QueryRow(ctx, `SELECT `+micros("now() - 'epoch'")).Scan(&now); err != nil {
		return Audit{}, fmt.Errorf("delayedorder: audit: %w", err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT o.status, `+micros("o.deadline - 'epoch'")+`, count(c.order_id),
		       coalesce(`+micros("min(c.cancelled_at) - 'epoch'")+`, `+micros("o.settled_at - 'epoch'")+`, 0)
		FROM orders o LEFT JOIN cancellations c ON c.order_id = o.id
		GROUP BY o.id`)
	if err != nil {
		return Audit{}, fmt.Errorf("delayedorder: audit: %w", err)
	}
	defer rows.Close()
	return audit(rows, now, grace, time.Microsecond)
}

// Unsettled counts the pending orders, and says how long the last of them
// has to its deadline.
func (s *PGStore) Unsettled(ctx context.Context) (int, time.Duration, error) {
	var (
		n    int
		last *int64
	)
	err := s.pool.QueryRow(ctx, `
		SELECT count(*), `+until("max(deadline)")+` FROM orders WHERE status = 'pending'`).Scan(&n, &last)
	if err != nil {
		return 0, 0, fmt.Errorf("delayedorder: count pending orders: %w", err)
	}
	if last == nil {
		return n, 0, nil
	}
	return n, fromMicros(*last), nil
}
