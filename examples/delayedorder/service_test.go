package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
)

const (
	payWithin = 30 * time.Minute
	tick      = time.Second
)

// cancelRecorder collects the orders a service reports cancelled.
type cancelRecorder struct {
	mu  sync.Mutex
	ids []int64
}

func (r *cancelRecorder) record(o Order) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, o.ID)
}

func (r *cancelRecorder) cancelled() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.ids...)
}

// shop is a service with a 30-minute payment window and a 1-second tick,
// on a database and a clock of the test's. Everything is closed at the end
// of the test.
type shop struct {
	store *Store
	path  string
	clk   clock.Clock
	svc   *Service
	rec   *cancelRecorder
}

// newShop starts a shop on a new database, on a fake clock at t0.
func newShop(t *testing.T, opts ...ServiceOption) (*shop, *clock.Fake) {
	t.Helper()
	store, path := openStore(t)
	fake := clock.NewFake(t0)
	return startShop(t, store, path, fake, opts...), fake
}

func startShop(t *testing.T, store *Store, path string, clk clock.Clock, opts ...ServiceOption) *shop {
	t.Helper()
	sh := &shop{store: store, path: path, clk: clk, rec: &cancelRecorder{}}
	opts = append([]ServiceOption{
		WithPayWithin(payWithin), WithTick(tick), WithClock(clk),
		WithLogger(discardLogger()), WithOnCancel(sh.rec.record),
	}, opts...)
	svc, err := Start(t.Context(), store.Orders(clk), opts...)
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	sh.svc = svc
	return sh
}

// restart ends the shop, as a process that stops, and starts a new one on
// the same database file with a fake clock at the given time.
func (sh *shop) restart(t *testing.T, at time.Time) (*shop, *clock.Fake) {
	t.Helper()
	sh.svc.Close()
	require.NoError(t, sh.store.Close())
	store, err := OpenStore(t.Context(), sh.path)
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	fake := clock.NewFake(at)
	return startShop(t, store, sh.path, fake), fake
}

func (sh *shop) place(t *testing.T) Order {
	t.Helper()
	o, err := sh.svc.Place(t.Context())
	require.NoError(t, err)
	return o
}

// get reads the order from the database.
func (sh *shop) get(t *testing.T, id int64) Order {
	t.Helper()
	o, err := sh.store.Get(t.Context(), id)
	require.NoError(t, err)
	return o
}

// requireCancelledOnce checks that the order is cancelled, at or after its
// deadline, with one cancellations row.
func (sh *shop) requireCancelledOnce(t *testing.T, o Order) {
	t.Helper()
	got := sh.get(t, o.ID)
	require.Equal(t, Cancelled, got.Status, "order %d", o.ID)
	assert.False(t, got.Settled.Before(o.Deadline), "order %d cancelled at %v, deadline %v", o.ID, got.Settled, o.Deadline)
	assert.Equal(t, []time.Time{got.Settled}, cancellationRows(t, sh.store, o.ID), "order %d", o.ID)
}

func TestUnpaidOrderIsCancelledAtItsDeadline(t *testing.T) {
	sh, fake := newShop(t)
	o := sh.place(t)
	assert.Equal(t, t0.Add(payWithin), o.Deadline)
	assert.Equal(t, 1, sh.svc.Armed())

	fake.Advance(payWithin - time.Millisecond)
	assert.Equal(t, Pending, sh.get(t, o.ID).Status, "a millisecond before the deadline")
	assert.Empty(t, sh.rec.cancelled())

	fake.Advance(tick + time.Millisecond)
	sh.requireCancelledOnce(t, o)
	assert.LessOrEqual(t, sh.get(t, o.ID).Settled.Sub(o.Deadline), tick, "within a tick")
	assert.Equal(t, []int64{o.ID}, sh.rec.cancelled())
	assert.Zero(t, sh.svc.Armed())
}

func TestPaymentDisarmsTheOrder(t *testing.T) {
	sh, fake := newShop(t)
	o := sh.place(t)
	fake.Advance(payWithin - time.Second)
	paid, err := sh.svc.Pay(t.Context(), o.ID)
	require.NoError(t, err)
	assert.Equal(t, Paid, paid.Status)
	assert.Equal(t, t0.Add(payWithin-time.Second), paid.Settled)
	assert.Zero(t, sh.svc.Armed(), "the payment cancelled the timeout")
	fake.Settle() // the wheel processes the cancellation
	assert.Zero(t, sh.svc.timer.PendingTimeouts())

	fake.Advance(time.Hour)
	assert.Equal(t, Paid, sh.get(t, o.ID).Status)
	assert.Empty(t, sh.rec.cancelled())
	assert.Empty(t, cancellationRows(t, sh.store, o.ID))
}

func TestPaymentAfterTheCancellationIsRefused(t *testing.T) {
	sh, fake := newShop(t)
	o := sh.place(t)
	fake.Advance(payWithin + tick)
	_, err := sh.svc.Pay(t.Context(), o.ID)
	require.ErrorIs(t, err, ErrOrderCancelled)
	sh.requireCancelledOnce(t, o)

	other := sh.place(t)
	_, err = sh.svc.Pay(t.Context(), other.ID)
	require.NoError(t, err)
	_, err = sh.svc.Pay(t.Context(), other.ID)
	require.ErrorIs(t, err, ErrAlreadyPaid)
	_, err = sh.svc.Pay(t.Context(), other.ID+100)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestRestartArmsPendingOrdersWithTheTimeLeft(t *testing.T) {
	sh, before := newShop(t)
	first := sh.place(t)
	before.Advance(10 * time.Minute)
	second := sh.place(t)
	paid := sh.place(t)
	_, err := sh.svc.Pay(t.Context(), paid.ID)
	require.NoError(t, err)

	// The new process starts 25 minutes after the first order: 5 minutes
	// left to it, 15 to the second.
	sh, after := sh.restart(t, t0.Add(25*time.Minute))
	assert.Equal(t, Recovery{Rearmed: 2}, sh.svc.Recovery())
	assert.Equal(t, 2, sh.svc.Armed())

	after.Advance(5*time.Minute - time.Millisecond)
	assert.Empty(t, sh.rec.cancelled(), "before the first deadline")
	after.Advance(tick + time.Millisecond)
	assert.Equal(t, []int64{first.ID}, sh.rec.cancelled())
	sh.requireCancelledOnce(t, first)
	assert.Equal(t, Pending, sh.get(t, second.ID).Status)

	after.Advance(10*time.Minute - tick - time.Millisecond)
	assert.Equal(t, []int64{first.ID}, sh.rec.cancelled(), "before the second deadline")
	after.Advance(tick + time.Millisecond)
	assert.Equal(t, []int64{first.ID, second.ID}, sh.rec.cancelled())
	sh.requireCancelledOnce(t, second)
	assert.Equal(t, Paid, sh.get(t, paid.ID).Status)
}

func TestRestartCancelsOverdueOrdersAtOnce(t *testing.T) {
	sh, before := newShop(t)
	overdue := sh.place(t)
	before.Advance(10 * time.Minute)
	later := sh.place(t)

	// Down from 10 to 31 minutes: the first deadline passed meanwhile.
	restartAt := t0.Add(31 * time.Minute)
	sh, _ = sh.restart(t, restartAt)
	assert.Equal(t, Recovery{Rearmed: 1, Overdue: 1}, sh.svc.Recovery())
	assert.Equal(t, []int64{overdue.ID}, sh.rec.cancelled(), "cancelled before Start returned")
	sh.requireCancelledOnce(t, overdue)
	assert.Equal(t, restartAt, sh.get(t, overdue.ID).Settled)
	assert.Equal(t, Pending, sh.get(t, later.ID).Status)
	assert.Equal(t, 1, sh.svc.Armed())
}

// steppedClock is a fake clock whose wall clock can be stepped back, as NTP
// may step a machine's, while its monotonic clock goes on.
type steppedClock struct {
	*clock.Fake
	back atomic.Int64
}

func (c *steppedClock) Now() time.Time { return c.Fake.Now().Add(-time.Duration(c.back.Load())) }

func TestWallClockSteppedBackDelaysTheCancellation(t *testing.T) {
	store, path := openStore(t)
	clk := &steppedClock{Fake: clock.NewFake(t0)}
	sh := startShop(t, store, path, clk)
	o := sh.place(t)
	clk.back.Store(int64(5 * time.Minute))

	// The timeout fires after 30 minutes of monotonic time, when the wall
	// clock reads 25 minutes after the order: the database refuses, and the
	// order is armed again for the 5 minutes left.
	clk.Advance(payWithin + tick)
	assert.Equal(t, Pending, sh.get(t, o.ID).Status)
	assert.Empty(t, sh.rec.cancelled())
	assert.Equal(t, 1, sh.svc.Armed())

	clk.Advance(5 * time.Minute)
	sh.requireCancelledOnce(t, o)
	assert.Equal(t, []int64{o.ID}, sh.rec.cancelled())
}

// TestTwoServicesOnOneDatabaseCancelOnce: a new process that starts while
// the old one still runs arms the same orders; each cancellation still
// commits once.
func TestTwoServicesOnOneDatabaseCancelOnce(t *testing.T) {
	old, fake := newShop(t)
	var orders []Order
	for range 20 {
		orders = append(orders, old.place(t))
	}
	fake.Advance(time.Minute)
	young := startShop(t, old.store, old.path, fake)
	assert.Equal(t, Recovery{Rearmed: 20}, young.svc.Recovery())

	fake.Advance(payWithin)
	cancelled := append(old.rec.cancelled(), young.rec.cancelled()...)
	assert.ElementsMatch(t, ids(orders), cancelled, "each order reported cancelled by exactly one service")
	for _, o := range orders {
		old.requireCancelledOnce(t, o)
	}
}

// TestPaymentsRacingCancellationsSettleEachOrderOnce pays every order while
// the timer cancels them at their deadline: each order ends either paid,
// and the payment accepted, or cancelled, and the payment refused.
func TestPaymentsRacingCancellationsSettleEachOrderOnce(t *testing.T) {
	sh, fake := newShop(t)
	const n = 100
	var orders []Order
	for range n {
		orders = append(orders, sh.place(t))
	}
	fake.Advance(payWithin - time.Millisecond)

	var wg sync.WaitGroup
	var paid, refused atomic.Int64
	errs := make(chan error, n)
	fake.Jump(tick + time.Millisecond) // the wheel starts cancelling while the payments come in
	for _, o := range orders {
		wg.Go(func() {
			switch _, err := sh.svc.Pay(context.Background(), o.ID); {
			case err == nil:
				paid.Add(1)
			case errors.Is(err, ErrOrderCancelled):
				refused.Add(1)
			default:
				errs <- err
			}
		})
	}
	wg.Wait()
	fake.Settle()
	close(errs)
	assert.Empty(t, errs)

	assert.Equal(t, int64(n), paid.Load()+refused.Load())
	assert.Len(t, sh.rec.cancelled(), int(refused.Load()), "a payment is refused exactly when the cancellation committed")
	for _, o := range orders {
		if sh.get(t, o.ID).Status == Cancelled {
			sh.requireCancelledOnce(t, o)
		} else {
			assert.Equal(t, Paid, sh.get(t, o.ID).Status, "order %d", o.ID)
			assert.Empty(t, cancellationRows(t, sh.store, o.ID), "order %d", o.ID)
		}
	}
	t.Logf("%d paid, %d refused", paid.Load(), refused.Load())
}

func TestFailedCancellationIsRetried(t *testing.T) {
	sh, fake := newShop(t, WithRetryAfter(10*time.Second))
	o := sh.place(t)
	_, err := sh.store.db.Exec(`CREATE TRIGGER fail_cancel BEFORE UPDATE ON orders WHEN NEW.status = 'cancelled'
		BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`)
	require.NoError(t, err)

	fake.Advance(payWithin + tick)
	assert.Equal(t, Pending, sh.get(t, o.ID).Status)
	assert.Empty(t, sh.rec.cancelled())
	assert.Equal(t, 1, sh.svc.Armed(), "armed again after the error")

	_, err = sh.store.db.Exec(`DROP TRIGGER fail_cancel`)
	require.NoError(t, err)
	fake.Advance(10*time.Second + tick)
	sh.requireCancelledOnce(t, o)
	assert.Equal(t, []int64{o.ID}, sh.rec.cancelled())
}

func TestClosedServiceKeepsOrdersPending(t *testing.T) {
	sh, fake := newShop(t)
	o := sh.place(t)
	sh.svc.Close()

	_, err := sh.svc.Place(t.Context())
	require.ErrorIs(t, err, ErrClosed)
	_, err = sh.svc.Pay(t.Context(), o.ID)
	require.ErrorIs(t, err, ErrClosed)
	fake.Advance(2 * payWithin)
	assert.Equal(t, Pending, sh.get(t, o.ID).Status, "left for the next start")
	assert.Empty(t, sh.rec.cancelled())
}

func TestStartRejectsBadOptions(t *testing.T) {
	store, _ := openStore(t)
	for name, opt := range map[string]ServiceOption{
		"zero pay-within": WithPayWithin(0),
		"negative tick":   WithTick(-time.Second),
		"zero retry":      WithRetryAfter(0),
		"nil logger":      WithLogger(nil),
		"nil on-cancel":   WithOnCancel(nil),
	} {
		svc, err := Start(t.Context(), store.Orders(clock.NewReal()), opt)
		assert.Error(t, err, name)
		assert.Nil(t, svc, name)
	}
	_, err := Start(t.Context(), nil)
	require.Error(t, err)
}

func TestWheelCoversThePaymentWindow(t *testing.T) {
	assert.Equal(t, 2048, wheelSize(30*time.Minute, time.Second))
	assert.Equal(t, 64, wheelSize(time.Second, time.Second), "at least 64 buckets")
	assert.Equal(t, 1<<16, wheelSize(24*time.Hour, time.Millisecond), "at most 65536 buckets")
}

func ids(orders []Order) []int64 {
	out := make([]int64, len(orders))
	for i, o := range orders {
		out[i] = o.ID
	}
	return out
}
