package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openPG opens the database at url as the named replica, closed at the end
// of the test.
func openPG(t *testing.T, url, replica string, opts ...PGOption) *PGStore {
	t.Helper()
	opts = append([]PGOption{WithStoreLogger(discardLogger())}, opts...)
	s, err := OpenPGStore(t.Context(), url, replica, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// pgExec runs a statement behind the stores' backs.
func pgExec(t *testing.T, s *PGStore, sql string, args ...any) {
	t.Helper()
	_, err := s.pool.Exec(t.Context(), sql, args...)
	require.NoError(t, err, sql)
}

// holder returns the replica holding the order, "" if none.
func holder(t *testing.T, s *PGStore, id int64) string {
	t.Helper()
	var by *string
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT claimed_by FROM orders WHERE id = $1`, id).Scan(&by))
	if by == nil {
		return ""
	}
	return *by
}

// cancelledBy returns the replicas named in the order's cancellations rows.
func cancelledBy(t *testing.T, s *PGStore, id int64) []string {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), `SELECT cancelled_by FROM cancellations WHERE order_id = $1`, id)
	require.NoError(t, err)
	by, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return by
}

// makeDue moves the order's deadline, and its lease if held, into the past
// on the server's clock, as if that much time had passed.
func makeDue(t *testing.T, s *PGStore, id int64) {
	t.Helper()
	pgExec(t, s, `UPDATE orders SET deadline = now() - interval '1 second',
		lease_until = CASE WHEN claimed_by IS NULL THEN NULL ELSE now() + interval '1 hour' END WHERE id = $1`, id)
}

// listening is a Listener whose calls go to channels.
type listening struct {
	paid    chan int64
	claimIn chan time.Duration
}

func listen(t *testing.T, s *PGStore) listening {
	t.Helper()
	l := listening{paid: make(chan int64, 100), claimIn: make(chan time.Duration, 100)}
	stop, err := s.Listen(t.Context(), Listener{
		Paid:    func(id int64) { l.paid <- id },
		ClaimIn: func(d time.Duration) { l.claimIn <- d },
	})
	require.NoError(t, err)
	t.Cleanup(stop)
	return l
}

func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s in 10 s", what)
		panic("unreachable")
	}
}

func TestPGCancelsOnlyAHeldPendingDueOrder(t *testing.T) {
	url := postgresURL(t)
	a := openPG(t, url, "a", WithWindow(time.Hour))
	b := openPG(t, url, "b", WithWindow(time.Hour))
	o, held, err := a.Create(t.Context(), 30*time.Minute)
	require.NoError(t, err)
	require.True(t, held, "due within a's window: a holds it")
	assert.Equal(t, Pending, o.Status)
	assert.Equal(t, 30*time.Minute, o.Deadline.Sub(o.Created))
	assert.Equal(t, "a", holder(t, a, o.ID))

	c, err := a.Cancel(t.Context(), o.ID)
	require.NoError(t, err)
	assert.False(t, c.Cancelled, "not due")
	assert.InDelta(t, 30*time.Minute, c.DueIn, float64(time.Minute), "the time it has left")

	makeDue(t, a, o.ID)
	c, err = b.Cancel(t.Context(), o.ID)
	require.NoError(t, err)
	assert.False(t, c.Cancelled, "b does not hold it")
	assert.Zero(t, c.DueIn, "nothing for b to arm")
	assert.Equal(t, Pending, c.Order.Status)

	c, err = a.Cancel(t.Context(), o.ID)
	require.NoError(t, err)
	assert.True(t, c.Cancelled)
	assert.Equal(t, Cancelled, c.Order.Status)
	assert.False(t, c.Order.Settled.Before(c.Order.Deadline), "never before the deadline")
	assert.Equal(t, []string{"a"}, cancelledBy(t, a, o.ID))

	c, err = a.Cancel(t.Context(), o.ID)
	require.NoError(t, err)
	assert.False(t, c.Cancelled, "a second cancellation does not commit")
	assert.Equal(t, []string{"a"}, cancelledBy(t, a, o.ID))
	_, err = b.Pay(t.Context(), o.ID)
	require.ErrorIs(t, err, ErrOrderCancelled)

	_, err = a.Cancel(t.Context(), o.ID+100)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = a.Pay(t.Context(), o.ID+100)
	require.ErrorIs(t, err, ErrNotFound)
}

// TestPGPaymentTellsTheHolder: a payment taken by another replica reaches
// the replica holding the order, through the database; one taken by the
// holder sends nothing.
func TestPGPaymentTellsTheHolder(t *testing.T) {
	url := postgresURL(t)
	a := openPG(t, url, "a")
	b := openPG(t, url, "b")
	la, lb := listen(t, a), listen(t, b)
	o, held, err := a.Create(t.Context(), 30*time.Second)
	require.NoError(t, err)
	require.True(t, held)
	assert.InDelta(t, 40*time.Second, receive(t, lb.claimIn, "claim notice"), float64(time.Second),
		"b may take it over when a's lease runs out: deadline + 10 s")

	paid, err := b.Pay(t.Context(), o.ID)
	require.NoError(t, err)
	assert.Equal(t, Paid, paid.Status)
	assert.Equal(t, o.ID, receive(t, la.paid, "payment notice"))
	_, err = a.Pay(t.Context(), o.ID)
	require.ErrorIs(t, err, ErrAlreadyPaid)

	own, _, err := a.Create(t.Context(), 30*time.Second)
	require.NoError(t, err)
	_, err = a.Pay(t.Context(), own.ID)
	require.NoError(t, err)
	// A notification is delivered after those sent before it: this one
	// comes after any the payment would have sent.
	pgExec(t, b, `SELECT pg_notify($1, 'paid a 0')`, pgChannel)
	assert.Equal(t, int64(0), receive(t, la.paid, "payment notice"), "the holder's own payment is not notified")
	assert.Empty(t, lb.paid, "b holds nothing")
	assert.Empty(t, la.claimIn, "a is told nothing of its own leases")
	assert.Empty(t, lb.claimIn, "the first order's announcement covers the second")
}

// TestPGClaimTakesTheOrdersDueWithinTheWindow: an order due beyond the
// window of the replica that makes it is held by none; every replica hears
// when to claim it, and the first claim within the window takes it.
func TestPGClaimTakesTheOrdersDueWithinTheWindow(t *testing.T) {
	url := postgresURL(t)
	a := openPG(t, url, "a", WithWindow(time.Minute), WithLease(10*time.Second))
	b := openPG(t, url, "b", WithWindow(time.Minute), WithLease(10*time.Second))
	la, lb := listen(t, a), listen(t, b)
	o, held, err := b.Create(t.Context(), 10*time.Minute)
	require.NoError(t, err)
	require.False(t, held, "due beyond the window")
	assert.Empty(t, holder(t, a, o.ID))
	// About half a window before the deadline, up to a quarter window
	// later, at random.
	inHalfWindow := func(d time.Duration, what string) {
		t.Helper()
		assert.GreaterOrEqual(t, d, 10*time.Minute-30*time.Second-time.Second, what)
		assert.LessOrEqual(t, d, 10*time.Minute-15*time.Second, what)
	}
	for _, l := range []listening{la, lb} {
		inHalfWindow(receive(t, l.claimIn, "claim notice"), "claim notice")
	}

	c, err := a.Claim(t.Context(), false)
	require.NoError(t, err)
	assert.Empty(t, c.Claims, "not within the window yet")
	require.False(t, c.Never)
	inHalfWindow(c.Next, "next claim")

	pgExec(t, a, `UPDATE orders SET deadline = now() + interval '50 seconds' WHERE id = $1`, o.ID)
	c, err = a.Claim(t.Context(), false)
	require.NoError(t, err)
	require.Len(t, c.Claims, 1)
	assert.Equal(t, o.ID, c.Claims[0].ID)
	assert.False(t, c.Claims[0].Mine, "newly claimed")
	assert.InDelta(t, 50*time.Second, c.Claims[0].DueIn, float64(time.Second))
	assert.Empty(t, c.Cancelled)
	require.False(t, c.Never)
	assert.InDelta(t, 10*time.Minute-30*time.Second, c.Next, float64(time.Second),
		"the announcement heard still wants a claim then, for the orders made after it")
	assert.Equal(t, "a", holder(t, a, o.ID))

	c, err = b.Claim(t.Context(), false)
	require.NoError(t, err)
	assert.Empty(t, c.Claims, "a holds it")
	require.False(t, c.Never)
	assert.InDelta(t, 60*time.Second, c.Next, float64(time.Second), "when a's lease runs out: deadline + lease")
}

// TestPGAnnouncementCoversTheOrdersMadeAfterIt: of orders made one after
// another, only the first is announced; a claim then finds them all.
func TestPGAnnouncementCoversTheOrdersMadeAfterIt(t *testing.T) {
	url := postgresURL(t)
	a := openPG(t, url, "a", WithWindow(time.Minute))
	b := openPG(t, url, "b", WithWindow(time.Minute))
	lb := listen(t, b)
	var made []int64
	for range 3 {
		o, held, err := a.Create(t.Context(), 10*time.Minute)
		require.NoError(t, err)
		require.False(t, held)
		made = append(made, o.ID)
	}
	receive(t, lb.claimIn, "claim notice")
	pgExec(t, a, `SELECT pg_notify($1, 'paid b 0')`, pgChannel) // after any notification of the orders
	assert.Equal(t, int64(0), receive(t, lb.paid, "payment notice"))
	assert.Empty(t, lb.claimIn, "one announcement for the three orders")

	pgExec(t, a, `UPDATE orders SET deadline = now() + interval '50 seconds'`)
	c, err := b.Claim(t.Context(), false)
	require.NoError(t, err)
	var claimed []int64
	for _, cl := range c.Claims {
		claimed = append(claimed, cl.ID)
	}
	assert.ElementsMatch(t, made, claimed)
}

// TestPGExpiredLeaseIsTakenOver: an order whose holder let its lease run
// out, as one that died does, is taken over by the next claim of another
// replica, which cancels it at once, being due; the old holder's
// cancellation no longer commits.
func TestPGExpiredLeaseIsTakenOver(t *testing.T) {
	url := postgresURL(t)
	a := openPG(t, url, "a", WithLease(10*time.Second))
	b := openPG(t, url, "b", WithLease(10*time.Second))
	o, _, err := a.Create(t.Context(), 30*time.Second)
	require.NoError(t, err)
	other, _, err := a.Create(t.Context(), 30*time.Second)
	require.NoError(t, err)
	pgExec(t, a, `UPDATE orders SET deadline = now() - interval '11 seconds', lease_until = now() - interval '1 second' WHERE id = $1`, o.ID)

	c, err := b.Claim(t.Context(), false)
	require.NoError(t, err)
	assert.Empty(t, c.Claims)
	require.Len(t, c.Cancelled, 1)
	got := c.Cancelled[0]
	assert.Equal(t, o.ID, got.ID)
	assert.Equal(t, Cancelled, got.Status)
	assert.GreaterOrEqual(t, got.Settled.Sub(got.Deadline), 11*time.Second)
	assert.Equal(t, []string{"b"}, cancelledBy(t, b, o.ID))
	assert.InDelta(t, 40*time.Second, c.Next, float64(time.Second), "when a's lease of the other order runs out")
	assert.Equal(t, "a", holder(t, a, other.ID), "a's lease of the other order holds")

	cancel, err := a.Cancel(t.Context(), o.ID)
	require.NoError(t, err)
	assert.False(t, cancel.Cancelled, "a no longer holds it")
	assert.Equal(t, []string{"b"}, cancelledBy(t, b, o.ID))
}

// TestPGRecoverTakesUpTheOrdersStillHeld: a replica that restarts under its
// name takes up the pending orders it held, and only those, and cancels
// those that fell due meanwhile.
func TestPGRecoverTakesUpTheOrdersStillHeld(t *testing.T) {
	url := postgresURL(t)
	a := openPG(t, url, "a")
	b := openPG(t, url, "b")
	var held []int64
	for range 4 {
		o, _, err := a.Create(t.Context(), 30*time.Second)
		require.NoError(t, err)
		held = append(held, o.ID)
	}
	_, err := b.Pay(t.Context(), held[1])
	require.NoError(t, err)
	makeDue(t, a, held[3])
	_, _, err = b.Create(t.Context(), 30*time.Second)
	require.NoError(t, err)

	again := openPG(t, url, "a")
	c, err := again.Claim(t.Context(), true)
	require.NoError(t, err)
	require.Len(t, c.Claims, 2)
	assert.Equal(t, []int64{held[0], held[2]}, []int64{c.Claims[0].ID, c.Claims[1].ID})
	for _, cl := range c.Claims {
		assert.True(t, cl.Mine)
		assert.InDelta(t, 30*time.Second, cl.DueIn, float64(time.Second))
	}
	require.Len(t, c.Cancelled, 1, "due while it was down")
	assert.Equal(t, held[3], c.Cancelled[0].ID)
	assert.Equal(t, []string{"a"}, cancelledBy(t, a, held[3]))
}

// TestPGConcurrentClaimsTakeEachOrderOnce: replicas claiming at once skip
// the rows the others have locked: each order is taken by exactly one.
func TestPGConcurrentClaimsTakeEachOrderOnce(t *testing.T) {
	url := postgresURL(t)
	const n = 600
	stores := []*PGStore{
		openPG(t, url, "a", WithWindow(time.Minute)),
		openPG(t, url, "b", WithWindow(time.Minute)),
		openPG(t, url, "c", WithWindow(time.Minute)),
	}
	pgExec(t, stores[0], `INSERT INTO orders (created_at, deadline)
		SELECT now(), now() + interval '30 seconds' FROM generate_series(1, $1)`, n)
	for _, s := range stores {
		s.cfg.maxClaim = 50 // many rounds each, so that the claims overlap
	}

	var (
		mu    sync.Mutex
		taken = map[int64]string{}
		wg    sync.WaitGroup
	)
	for _, s := range stores {
		wg.Go(func() {
			for {
				c, err := s.Claim(context.Background(), false)
				if !assert.NoError(t, err) || len(c.Claims) == 0 {
					return
				}
				mu.Lock()
				for _, c := range c.Claims {
					assert.NotContains(t, taken, c.ID, "order %d taken twice", c.ID)
					taken[c.ID] = s.Replica()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, taken, n, "every order taken")
	for id, by := range taken {
		assert.Equal(t, by, holder(t, stores[0], id))
	}
}

func TestOpenPGStoreRejectsBadInput(t *testing.T) {
	ctx := t.Context()
	for name, replica := range map[string]string{"empty": "", "space": "a b", "too long": string(make([]byte, 41))} {
		_, err := OpenPGStore(ctx, "postgres://localhost/none", replica)
		assert.ErrorContains(t, err, "replica name", name)
	}
	_, err := OpenPGStore(ctx, "postgres://localhost/none", "a", WithLease(0))
	assert.ErrorContains(t, err, "must be positive")
	_, err = OpenPGStore(ctx, "postgres://localhost/none", "a", WithStoreLogger(nil))
	assert.ErrorContains(t, err, "nil logger")
	_, err = OpenPGStore(ctx, "postgres://%zz", "a")
	assert.ErrorContains(t, err, "database URL")
}
