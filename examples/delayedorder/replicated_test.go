package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startReplicaService starts a Service on a PGStore of the named replica,
// with the real clock: these tests are of replicas meeting deadlines on
// the server's clock.
func startReplicaService(t *testing.T, url, name string, payWithin, tick time.Duration, rec *cancelRecorder, opts ...PGOption) (*Service, *PGStore) {
	t.Helper()
	store := openPG(t, url, name, opts...)
	svc, err := Start(t.Context(), store, WithPayWithin(payWithin), WithTick(tick),
		WithLogger(discardLogger()), WithOnCancel(rec.record))
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	return svc, store
}

// twoReplicas starts replicas a and b on a new database, with a tick of
// 10 ms, each reporting its cancellations to its recorder; store is a's.
func twoReplicas(t *testing.T, payWithin time.Duration, recA, recB *cancelRecorder, opts ...PGOption) (a, b *Service, store *PGStore) {
	t.Helper()
	url := postgresURL(t)
	a, store = startReplicaService(t, url, "a", payWithin, 10*time.Millisecond, recA, opts...)
	b, _ = startReplicaService(t, url, "b", payWithin, 10*time.Millisecond, recB, opts...)
	return a, b, store
}

// lateness returns how long after its deadline the order was cancelled,
// on the server's clock.
func lateness(t *testing.T, s *PGStore, id int64) time.Duration {
	t.Helper()
	var late time.Duration
	require.NoError(t, s.pool.QueryRow(t.Context(),
		`SELECT c.cancelled_at - o.deadline FROM orders o JOIN cancellations c ON c.order_id = o.id WHERE o.id = $1`, id).Scan(&late))
	return late
}

// TestReplicaTakesOverTheOrdersOfOneThatDied: replica a holds orders and
// stops without cancelling them, as a killed one does; replica b takes
// each over when its lease runs out, and cancels it then.
func TestReplicaTakesOverTheOrdersOfOneThatDied(t *testing.T) {
	const lease = 400 * time.Millisecond
	recA, recB := &cancelRecorder{}, &cancelRecorder{}
	a, b, storeA := twoReplicas(t, 300*time.Millisecond, recA, recB, WithLease(lease))
	var orders []Order
	for range 20 {
		o, err := a.Place(t.Context())
		require.NoError(t, err)
		orders = append(orders, o)
	}
	assert.Equal(t, 20, a.Armed())
	a.Close() // a dies holding them

	waitFor(t, 10*time.Second, "b cancelled every order", func() bool { return len(recB.cancelled()) >= len(orders) })
	assert.Empty(t, recA.cancelled())
	assert.ElementsMatch(t, ids(orders), recB.cancelled())
	for _, o := range orders {
		late := lateness(t, storeA, o.ID)
		assert.GreaterOrEqual(t, late, lease, "order %d: not before the lease ran out", o.ID)
		assert.Less(t, late, lease+time.Second, "order %d: as the lease runs out", o.ID)
	}
	assert.Zero(t, b.Armed())
}

// TestReplicasShareTheOrders: orders due beyond the window of the replica
// that makes them are claimed by either replica within it; a payment taken
// by the replica that does not hold the order disarms it on the one that
// does, through the database, before its deadline; every unpaid order is
// cancelled once, near its deadline.
func TestReplicasShareTheOrders(t *testing.T) {
	rec := &cancelRecorder{}
	a, b, storeA := twoReplicas(t, 3*time.Second, rec, rec, WithWindow(2*time.Second))
	replicas := map[string]*Service{"a": a, "b": b}

	var placed []Order
	for i := range 40 {
		o, err := []*Service{a, b}[i%2].Place(t.Context())
		require.NoError(t, err)
		placed = append(placed, o)
	}
	unclaimed := func() (n int) {
		require.NoError(t, storeA.pool.QueryRow(t.Context(), `SELECT count(*) FROM orders WHERE claimed_by IS NULL`).Scan(&n))
		return n
	}
	assert.Equal(t, len(placed), unclaimed(), "due beyond the window: held by none when made")
	waitFor(t, time.Until(placed[0].Deadline), "every order claimed", func() bool { return unclaimed() == 0 })
	require.Equal(t, len(placed), a.Armed()+b.Armed())

	// Half the orders paid, each on the replica that does not hold it.
	paid, unpaid := placed[:20], placed[20:]
	for _, o := range paid {
		payer := replicas["a"]
		if holder(t, storeA, o.ID) == "a" {
			payer = replicas["b"]
		}
		_, err := payer.Pay(t.Context(), o.ID)
		require.NoError(t, err)
	}
	waitFor(t, time.Until(placed[0].Deadline), "the paid orders disarmed on the replicas that hold them",
		func() bool { return a.Armed()+b.Armed() == len(unpaid) })

	waitFor(t, 10*time.Second, "the unpaid orders cancelled", func() bool { return len(rec.cancelled()) >= len(unpaid) })
	assert.ElementsMatch(t, ids(unpaid), rec.cancelled(), "each unpaid order cancelled once, no paid one")
	for _, o := range unpaid {
		assert.Less(t, lateness(t, storeA, o.ID), time.Second, "order %d: near its deadline", o.ID)
	}
	for _, o := range paid {
		got, err := storeA.Get(t.Context(), o.ID)
		require.NoError(t, err)
		assert.Equal(t, Paid, got.Status)
	}
}

// waitFor polls cond until it holds, failing the test after within: the
// replicas' progress, in the database and on their wheels, has nothing to
// wait on but a poll.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	giveUp := time.Now().Add(within)
	for !cond() {
		require.True(t, time.Now().Before(giveUp), "not in %v: %s", within, what)
		time.Sleep(5 * time.Millisecond)
	}
}
