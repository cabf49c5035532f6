package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// ErrClosed is returned by a Service's methods after Close.
var ErrClosed = errors.New("delayedorder: service closed")

// Service places orders, takes payments and cancels the orders left unpaid
// at their deadline. The database holds the truth; the wheel holds, in
// memory, one timeout per pending order, which only tells the service when
// to ask the database to cancel it. Losing the wheel (a crash, a restart)
// loses nothing: Start arms every pending order again from the database.
type Service struct {
	store *Store
	clock clock.Clock
	timer *hashedwheel.HashedWheelTimer
	cfg   serviceConfig
	log   *slog.Logger
	rec   Recovery // written by Start only

	mu     sync.Mutex
	armed  map[int64]hashedwheel.Timeout // pending orders' timeouts, for Pay to cancel; guarded by mu
	closed bool                          // guarded by mu
}

// Recovery is what Start found in the database.
type Recovery struct {
	Rearmed int // pending orders armed with the time they had left
	Overdue int // pending orders whose deadline passed while no process ran: cancelled by Start
}

type serviceConfig struct {
	payWithin  time.Duration
	tick       time.Duration
	retryAfter time.Duration
	clock      clock.Clock
	logger     *slog.Logger
	onCancel   func(Order)
}

// ServiceOption configures a Service.
type ServiceOption func(*serviceConfig)

// WithPayWithin sets how long an order may stay unpaid. Default 30 minutes.
// It applies to orders placed from then on: an order's deadline is stored
// with it.
func WithPayWithin(d time.Duration) ServiceOption {
	return func(c *serviceConfig) { c.payWithin = d }
}

// WithTick sets the wheel's tick: an order is cancelled within about a
// tick after its deadline. Default 1 second.
func WithTick(d time.Duration) ServiceOption { return func(c *serviceConfig) { c.tick = d } }

// WithRetryAfter sets how long the service waits before it tries again to
// cancel an order after a database error. Default 1 second.
func WithRetryAfter(d time.Duration) ServiceOption {
	return func(c *serviceConfig) { c.retryAfter = d }
}

// WithClock sets the time source of the wheel and of the times written to
// the database. Default the runtime's clock; tests give a *clock.Fake.
func WithClock(c clock.Clock) ServiceOption { return func(cfg *serviceConfig) { cfg.clock = c } }

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) ServiceOption { return func(c *serviceConfig) { c.logger = l } }

// WithOnCancel sets a function called once for each order this service
// cancelled, after the cancellation committed, on a timer goroutine (or in
// Start, for orders overdue at start). A process killed between the commit
// and the call never calls it for that order: read the cancellations table
// for a complete account.
func WithOnCancel(f func(Order)) ServiceOption { return func(c *serviceConfig) { c.onCancel = f } }

// Start makes a service on store and arms every pending order with the time
// left to its deadline; an order whose deadline has passed is cancelled
// before Start returns.
func Start(ctx context.Context, store *Store, opts ...ServiceOption) (*Service, error) {
	cfg := serviceConfig{
		payWithin:  30 * time.Minute,
		tick:       time.Second,
		retryAfter: time.Second,
		logger:     slog.Default(),
		onCancel:   func(Order) {},
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.clock == nil {
		cfg.clock = clock.NewReal()
	}
	switch {
	case store == nil:
		return nil, errors.New("delayedorder: nil store")
	case cfg.payWithin <= 0 || cfg.tick <= 0 || cfg.retryAfter <= 0:
		return nil, fmt.Errorf("delayedorder: pay-within %v, tick %v and retry %v must be positive",
			cfg.payWithin, cfg.tick, cfg.retryAfter)
	case cfg.logger == nil || cfg.onCancel == nil:
		return nil, errors.New("delayedorder: nil logger or cancel function")
	}
	// Tasks read and write the database, so they run on the timer's pool,
	// not on its worker. A turn of the wheel covers the payment window, so
	// the worker looks at an order once, in the tick it is due.
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(cfg.tick),
		hashedwheel.WithTicksPerWheel(wheelSize(cfg.payWithin, cfg.tick)),
		hashedwheel.WithClock(cfg.clock),
		hashedwheel.WithLogger(cfg.logger),
	)
	if err != nil {
		return nil, err
	}
	s := &Service{
		store: store,
		clock: cfg.clock,
		timer: timer,
		cfg:   cfg,
		log:   cfg.logger,
		armed: make(map[int64]hashedwheel.Timeout),
	}
	if err := s.recover(ctx); err != nil {
		timer.Stop()
		return nil, err
	}
	return s, nil
}

// wheelSize is the number of ticks that covers payWithin, within the
// wheel's limits.
func wheelSize(payWithin, tick time.Duration) int {
	n := min(max(payWithin/tick+1, 64), 1<<16)
	return 1 << bits.Len64(uint64(n-1))
}

// recover arms every pending order, and cancels those already due.
func (s *Service) recover(ctx context.Context) error {
	pending, err := s.store.Pending(ctx)
	if err != nil {
		return err
	}
	for _, o := range pending {
		if o.Deadline.After(s.clock.Now()) {
			if err := s.arm(o.ID, o.Deadline); err != nil {
				return err
			}
			s.rec.Rearmed++
			continue
		}
		got, cancelled, err := s.store.Cancel(ctx, o.ID, s.clock.Now())
		switch {
		case err != nil:
			return err
		case cancelled:
			s.rec.Overdue++
			s.cfg.onCancel(got)
		case got.Status == Pending: // the clock stepped back since the check
			if err := s.arm(o.ID, got.Deadline); err != nil {
				return err
			}
			s.rec.Rearmed++
		}
	}
	s.log.Info("orders recovered", "rearmed", s.rec.Rearmed, "cancelled_overdue", s.rec.Overdue)
	return nil
}

// Recovery reports what Start found.
func (s *Service) Recovery() Recovery { return s.rec }

// Armed reports the number of orders the wheel holds a timeout for.
func (s *Service) Armed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.armed)
}

// Place stores a new order and arms its timeout. If the order was stored
// but the service closed before it was armed, Place returns the order and
// an error wrapping ErrClosed: the order stays pending, and the next Start
// arms it.
func (s *Service) Place(ctx context.Context) (Order, error) {
	if s.isClosed() {
		return Order{}, ErrClosed
	}
	now := s.clock.Now()
	o, err := s.store.Create(ctx, now, now.Add(s.cfg.payWithin))
	if err != nil {
		return Order{}, err
	}
	if err := s.arm(o.ID, o.Deadline); err != nil {
		return o, fmt.Errorf("order %d stored, to be armed at the next start: %w", o.ID, err)
	}
	return o, nil
}

// Pay records the payment of a pending order and cancels its timeout. It
// fails with ErrOrderCancelled if the cancellation committed first (the
// payment is to be refunded), ErrAlreadyPaid or ErrNotFound. A payment a
// little after the deadline is accepted while the cancellation has not
// committed: the database, not the clock, orders the two.
func (s *Service) Pay(ctx context.Context, id int64) (Order, error) {
	if s.isClosed() {
		return Order{}, ErrClosed
	}
	o, err := s.store.Pay(ctx, id, s.clock.Now())
	if err != nil {
		return o, err
	}
	s.mu.Lock()
	if t, ok := s.armed[id]; ok {
		t.Cancel()
		delete(s.armed, id)
	}
	s.mu.Unlock()
	return o, nil
}

// Close stops the wheel and waits for the cancellations it started. Orders
// still pending stay pending in the database, for the next Start. It does
// not close the store.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.timer.Stop()
}

func (s *Service) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// arm schedules the order's cancellation at deadline, as the service's
// clock reads it. The lock is held across scheduling so that the task,
// which removes the entry, never runs before it is made.
func (s *Service) arm(id int64, deadline time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t, err := s.timer.AfterFunc(deadline.Sub(s.clock.Now()), func() { s.expire(id) })
	if err != nil {
		return err
	}
	s.armed[id] = t
	return nil
}

// expire runs when an order's timeout fires: it asks the database to cancel
// the order, which it does only if the order is still pending and due.
func (s *Service) expire(id int64) {
	s.mu.Lock()
	delete(s.armed, id)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, cancelled, err := s.store.Cancel(ctx, id, s.clock.Now())
	switch {
	case errors.Is(err, ErrNotFound):
		s.log.Warn("armed order is gone from the database", "order", id)
	case err != nil:
		// Still pending in the database: try again later; a restart would
		// arm it again anyway.
		s.log.Error("cancelling order failed; retrying", "order", id, "after", s.cfg.retryAfter, "err", err)
		s.rearm(id, s.clock.Now().Add(s.cfg.retryAfter))
	case cancelled:
		s.cfg.onCancel(o)
	case o.Status == Pending:
		// The wall clock reads a time before the deadline: wait for it.
		s.rearm(id, o.Deadline)
	}
}

func (s *Service) rearm(id int64, at time.Time) {
	if err := s.arm(id, at); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, hashedwheel.ErrStopped) {
		s.log.Error("re-arming order failed; it will be armed at the next start", "order", id, "err", err)
	}
}
