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

// startService starts a service on the store, with a 30-minute payment
// window and a 1-second tick on clk; it is closed at the end of the test.
func startService(t *testing.T, s *Store, clk clock.Clock, opts ...ServiceOption) (*Service, *cancelRecorder) {
	t.Helper()
	rec := &cancelRecorder{}
	opts = append([]ServiceOption{
		WithPayWithin(payWithin), WithTick(tick), WithClock(clk),
		WithLogger(discardLogger()), WithOnCancel(rec.record),
	}, opts...)
	svc, err := Start(context.Background(), s, opts...)
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	return svc, rec
}

func status(t *testing.T, s *Store, id int64) Order {
	t.Helper()
	o, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	return o
}

func TestUnpaidOrderIsCancelledAtItsDeadline(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	fake := clock.NewFake(t0)
	svc, rec := startService(t, s, fake)
	o, err := svc.Place(ctx)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(payWithin), o.Deadline)
	assert.Equal(t, 1, svc.Armed())

	fake.Advance(payWithin - time.Millisecond)
	assert.Equal(t, Pending, status(t, s, o.ID).Status, "a millisecond before the deadline")
	assert.Empty(t, rec.cancelled())

	fake.Advance(tick + time.Millisecond)
	got := status(t, s, o.ID)
	assert.Equal(t, Cancelled, got.Status, "a tick after the deadline")
	assert.False(t, got.Settled.Before(o.Deadline), "cancelled at %v, deadline %v", got.Settled, o.Deadline)
	assert.LessOrEqual(t, got.Settled.Sub(o.Deadline), tick)
	assert.Equal(t, []int64{o.ID}, rec.cancelled())
	assert.Len(t, cancellationRows(t, s, o.ID), 1)
	assert.Zero(t, svc.Armed())
}

func TestPaymentDisarmsTheOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	fake := clock.NewFake(t0)
	svc, rec := startService(t, s, fake)
	o, err := svc.Place(ctx)
	require.NoError(t, err)
	fake.Advance(payWithin - time.Second)
	paid, err := svc.Pay(ctx, o.ID)
	require.NoError(t, err)
	assert.Equal(t, Paid, paid.Status)
	assert.Equal(t, t0.Add(payWithin-time.Second), paid.Settled)
	assert.Zero(t, svc.Armed(), "the payment cancelled the timeout")
	fake.Settle() // the wheel processes the cancellation
	assert.Zero(t, svc.timer.PendingTimeouts())

	fake.Advance(time.Hour)
	assert.Equal(t, Paid, status(t, s, o.ID).Status)
	assert.Empty(t, rec.cancelled())
	assert.Empty(t, cancellationRows(t, s, o.ID))
}

func TestPaymentAfterTheCancellationIsRefused(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	fake := clock.NewFake(t0)
	svc, _ := startService(t, s, fake)
	o, err := svc.Place(ctx)
	require.NoError(t, err)
	fake.Advance(payWithin + tick)

	_, err = svc.Pay(ctx, o.ID)
	require.ErrorIs(t, err, ErrOrderCancelled)
	assert.Equal(t, Cancelled, status(t, s, o.ID).Status)

	other, err := svc.Place(ctx)
	require.NoError(t, err)
	_, err = svc.Pay(ctx, other.ID)
	require.NoError(t, err)
	_, err = svc.Pay(ctx, other.ID)
	require.ErrorIs(t, err, ErrAlreadyPaid)
	_, err = svc.Pay(ctx, other.ID+100)
	require.ErrorIs(t, err, ErrNotFound)
}

// restart closes svc and its store, as a process that ends, and opens the
// database again.
func restart(t *testing.T, svc *Service, s *Store, path string) *Store {
	t.Helper()
	svc.Close()
	require.NoError(t, s.Close())
	s2, err := OpenStore(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { s2.Close() })
	return s2
}

func TestRestartArmsPendingOrdersWithTheTimeLeft(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	before := clock.NewFake(t0)
	svc, _ := startService(t, s, before)
	first, err := svc.Place(ctx)
	require.NoError(t, err)
	before.Advance(10 * time.Minute)
	second, err := svc.Place(ctx)
	require.NoError(t, err)
	paid, err := svc.Place(ctx)
	require.NoError(t, err)
	_, err = svc.Pay(ctx, paid.ID)
	require.NoError(t, err)
	s = restart(t, svc, s, path)

	// The new process starts 25 minutes after the first order: 5 minutes
	// left to it, 15 to the second.
	after := clock.NewFake(t0.Add(25 * time.Minute))
	svc, rec := startService(t, s, after)
	assert.Equal(t, Recovery{Rearmed: 2}, svc.Recovery())
	assert.Equal(t, 2, svc.Armed())

	after.Advance(5*time.Minute - time.Millisecond)
	assert.Empty(t, rec.cancelled(), "before the first deadline")
	after.Advance(tick + time.Millisecond)
	assert.Equal(t, []int64{first.ID}, rec.cancelled())
	assert.Equal(t, Pending, status(t, s, second.ID).Status)
	after.Advance(10*time.Minute - tick - time.Millisecond)
	assert.Equal(t, []int64{first.ID}, rec.cancelled(), "before the second deadline")
	after.Advance(tick + time.Millisecond)
	assert.Equal(t, []int64{first.ID, second.ID}, rec.cancelled())
	for _, o := range []Order{first, second} {
		got := status(t, s, o.ID)
		assert.Equal(t, Cancelled, got.Status)
		assert.False(t, got.Settled.Before(o.Deadline))
		assert.Len(t, cancellationRows(t, s, o.ID), 1)
	}
	assert.Equal(t, Paid, status(t, s, paid.ID).Status)
}

func TestRestartCancelsOverdueOrdersAtOnce(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	before := clock.NewFake(t0)
	svc, _ := startService(t, s, before)
	overdue, err := svc.Place(ctx)
	require.NoError(t, err)
	before.Advance(10 * time.Minute)
	later, err := svc.Place(ctx)
	require.NoError(t, err)
	s = restart(t, svc, s, path)

	// Down from 10 to 31 minutes: the first deadline passed meanwhile.
	restartAt := t0.Add(31 * time.Minute)
	svc, rec := startService(t, s, clock.NewFake(restartAt))
	assert.Equal(t, Recovery{Rearmed: 1, Overdue: 1}, svc.Recovery())
	assert.Equal(t, []int64{overdue.ID}, rec.cancelled(), "cancelled before Start returned")
	got := status(t, s, overdue.ID)
	assert.Equal(t, Cancelled, got.Status)
	assert.Equal(t, restartAt, got.Settled)
	assert.Equal(t, Pending, status(t, s, later.ID).Status)
	assert.Equal(t, 1, svc.Armed())
}

// steppedClock is a fake clock whose wall clock can be stepped back, as NTP
// may step a machine's, while its monotonic clock goes on.
type steppedClock struct {
	*clock.Fake
	back atomic.Int64
}

func (c *steppedClock) Now() time.Time { return c.Fake.Now().Add(-time.Duration(c.back.Load())) }

func TestWallClockSteppedBackDelaysTheCancellation(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	clk := &steppedClock{Fake: clock.NewFake(t0)}
	svc, rec := startService(t, s, clk)
	o, err := svc.Place(ctx)
	require.NoError(t, err)
	clk.back.Store(int64(5 * time.Minute))

	// The timeout fires after 30 minutes of monotonic time, when the wall
	// clock reads 25 minutes after the order: the database refuses, and the
	// order is armed again for the 5 minutes left.
	clk.Advance(payWithin + tick)
	assert.Equal(t, Pending, status(t, s, o.ID).Status)
	assert.Empty(t, rec.cancelled())
	assert.Equal(t, 1, svc.Armed())

	clk.Advance(5 * time.Minute)
	got := status(t, s, o.ID)
	assert.Equal(t, Cancelled, got.Status)
	assert.False(t, got.Settled.Before(o.Deadline), "cancelled at %v, deadline %v", got.Settled, o.Deadline)
	assert.Equal(t, []int64{o.ID}, rec.cancelled())
}

// TestTwoServicesOnOneDatabaseCancelOnce: a new process that starts while
// the old one still runs arms the same orders; each cancellation still
// commits once.
func TestTwoServicesOnOneDatabaseCancelOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	fake := clock.NewFake(t0)
	old, oldRec := startService(t, s, fake)
	var orders []Order
	for range 20 {
		o, err := old.Place(ctx)
		require.NoError(t, err)
		orders = append(orders, o)
	}
	fake.Advance(time.Minute)
	young, youngRec := startService(t, s, fake)
	assert.Equal(t, Recovery{Rearmed: 20}, young.Recovery())

	fake.Advance(payWithin)
	cancelled := append(oldRec.cancelled(), youngRec.cancelled()...)
	assert.ElementsMatch(t, ids(orders), cancelled, "each order reported cancelled by exactly one service")
	for _, o := range orders {
		assert.Len(t, cancellationRows(t, s, o.ID), 1, "order %d", o.ID)
	}
}

// TestPaymentsRacingCancellationsSettleEachOrderOnce pays every order while
// the timer cancels them at their deadline: each order ends either paid,
// and the payment accepted, or cancelled, and the payment refused.
func TestPaymentsRacingCancellationsSettleEachOrderOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	fake := clock.NewFake(t0)
	svc, rec := startService(t, s, fake)
	const n = 100
	var orders []Order
	for range n {
		o, err := svc.Place(ctx)
		require.NoError(t, err)
		orders = append(orders, o)
	}
	fake.Advance(payWithin - time.Millisecond)

	var wg sync.WaitGroup
	var paid, refused atomic.Int64
	errs := make(chan error, n)
	fake.Jump(tick + time.Millisecond) // the wheel starts cancelling while the payments come in
	for _, o := range orders {
		wg.Go(func() {
			switch _, err := svc.Pay(ctx, o.ID); {
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
	assert.Len(t, rec.cancelled(), int(refused.Load()), "a payment is refused exactly when the cancellation committed")
	for _, o := range orders {
		got := status(t, s, o.ID)
		rows := cancellationRows(t, s, o.ID)
		if got.Status == Cancelled {
			assert.Len(t, rows, 1, "order %d", o.ID)
		} else {
			assert.Equal(t, Paid, got.Status, "order %d", o.ID)
			assert.Empty(t, rows, "order %d", o.ID)
		}
	}
	t.Logf("%d paid, %d refused", paid.Load(), refused.Load())
}

func TestFailedCancellationIsRetried(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	fake := clock.NewFake(t0)
	svc, rec := startService(t, s, fake, WithRetryAfter(10*time.Second))
	o, err := svc.Place(ctx)
	require.NoError(t, err)
	_, err = s.db.Exec(`CREATE TRIGGER fail_cancel BEFORE UPDATE ON orders WHEN NEW.status = 'cancelled'
		BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`)
	require.NoError(t, err)

	fake.Advance(payWithin + tick)
	assert.Equal(t, Pending, status(t, s, o.ID).Status)
	assert.Empty(t, rec.cancelled())
	assert.Equal(t, 1, svc.Armed(), "armed again after the error")

	_, err = s.db.Exec(`DROP TRIGGER fail_cancel`)
	require.NoError(t, err)
	fake.Advance(10*time.Second + tick)
	assert.Equal(t, Cancelled, status(t, s, o.ID).Status)
	assert.Equal(t, []int64{o.ID}, rec.cancelled())
}

func TestClosedServiceKeepsOrdersPending(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	fake := clock.NewFake(t0)
	svc, rec := startService(t, s, fake)
	o, err := svc.Place(ctx)
	require.NoError(t, err)
	svc.Close()

	_, err = svc.Place(ctx)
	require.ErrorIs(t, err, ErrClosed)
	_, err = svc.Pay(ctx, o.ID)
	require.ErrorIs(t, err, ErrClosed)
	fake.Advance(2 * payWithin)
	assert.Equal(t, Pending, status(t, s, o.ID).Status, "left for the next start")
	assert.Empty(t, rec.cancelled())
}

func TestStartRejectsBadOptions(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	for name, opt := range map[string]ServiceOption{
		"zero pay-within": WithPayWithin(0),
		"negative tick":   WithTick(-time.Second),
		"zero retry":      WithRetryAfter(0),
		"nil logger":      WithLogger(nil),
		"nil on-cancel":   WithOnCancel(nil),
	} {
		svc, err := Start(ctx, s, opt)
		assert.Error(t, err, name)
		assert.Nil(t, svc, name)
	}
	_, err := Start(ctx, nil)
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
