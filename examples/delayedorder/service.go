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
// memory, one timeout per order this replica holds, which only tells the
// service when to ask the database to cancel it. Losing the wheel (a crash,
// a restart) loses nothing: Start arms the held orders again from the
// database, and on a database shared by replicas the others take over the
// orders of one that does not come back when their leases run out.
type Service struct {
	orders   Orders
	timer    *hashedwheel.HashedWheelTimer
	cfg      serviceConfig
	log      *slog.Logger
	rec      Recovery // written by Start only
	unlisten func()   // stops Orders.Listen; set by Start only

	mu       sync.Mutex
	armed    map[int64]hashedwheel.Timeout // held orders' timeouts, for Pay to cancel; guarded by mu
	claim    hashedwheel.Timeout           // the next claim, nil if none armed; guarded by mu
	claimGen uint64                        // counts the claims armed, so that a claim clears only its own; guarded by mu
	closed   bool                          // guarded by mu
}

// Recovery is what Start found in the database.
type Recovery struct {
	Rearmed int // held orders armed with the time they had left
	Overdue int // held or claimed orders whose deadline had passed: cancelled by Start
	Claimed int // orders the first claim took and armed (a shared database only)
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

// WithClock sets the wheel's time source. Default the runtime's clock;
// tests give a *clock.Fake, the same they give Store.Orders.
func WithClock(c clock.Clock) ServiceOption { return func(cfg *serviceConfig) { cfg.clock = c } }

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) ServiceOption { return func(c *serviceConfig) { c.logger = l } }

// WithOnCancel sets a function called once for each order this service
// cancelled, after the cancellation committed, on a timer goroutine (or in
// Start, for orders overdue at start). A process killed between the commit
// and the call never calls it for that order: read the cancellations table
// for a complete account.
func WithOnCancel(f func(Order)) ServiceOption { return func(c *serviceConfig) { c.onCancel = f } }

// Start makes a service on orders, arms the orders this replica holds with
// the time left to their deadline, and claims those it is now to hold; an
// order whose deadline has passed is cancelled before Start returns. From
// then on it claims again whenever the database says a claim may find an
// order.
func Start(ctx context.Context, orders Orders, opts ...ServiceOption) (*Service, error) {
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
	case orders == nil:
		return nil, errors.New("delayedorder: nil orders")
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
		orders: orders,
		timer:  timer,
		cfg:    cfg,
		log:    cfg.logger,
		armed:  make(map[int64]hashedwheel.Timeout),
	}
	// Listening before recovering: news that comes meanwhile is acted on,
	// none falls between the two.
	s.unlisten, err = orders.Listen(ctx, Listener{Paid: s.disarm, ClaimIn: s.claimIn})
	if err != nil {
		timer.Stop()
		return nil, err
	}
	if err := s.recover(ctx); err != nil {
		s.Close()
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

// recover arms the orders this replica held before it started and claims
// those it is now to hold; those due are cancelled by the claim.
func (s *Service) recover(ctx context.Context) error {
	c, err := s.orders.Claim(ctx, true)
	if err != nil {
		return err
	}
	s.rec.Overdue = len(c.Cancelled)
	for _, cl := range c.Claims {
		if err := s.arm(cl.ID, cl.DueIn); err != nil {
			return err
		}
		if cl.Mine {
			s.rec.Rearmed++
		} else {
			s.rec.Claimed++
		}
	}
	s.claimed(c)
	s.log.Info("orders recovered", "rearmed", s.rec.Rearmed, "claimed", s.rec.Claimed, "cancelled_overdue", s.rec.Overdue)
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

// Place stores a new order and, if this replica holds it, arms its
// timeout. If the order was stored but the service closed before it was
// armed, Place returns the order and an error wrapping ErrClosed: the order
// stays pending, and the next Start arms it.
func (s *Service) Place(ctx context.Context) (Order, error) {
	if s.isClosed() {
		return Order{}, ErrClosed
	}
	o, held, err := s.orders.Create(ctx, s.cfg.payWithin)
	if err != nil {
		return Order{}, err
	}
	if !held {
		return o, nil
	}
	if err := s.arm(o.ID, s.cfg.payWithin); err != nil {
		return o, fmt.Errorf("order %d stored, to be armed at the next start: %w", o.ID, err)
	}
	return o, nil
}

// Pay records the payment of a pending order and cancels its timeout, here
// or, through the database, on the replica that holds it. It fails with
// ErrOrderCancelled if the cancellation committed first (the payment is to
// be refunded), ErrAlreadyPaid or ErrNotFound. A payment a little after the
// deadline is accepted while the cancellation has not committed: the
// database, not the clock, orders the two.
func (s *Service) Pay(ctx context.Context, id int64) (Order, error) {
	if s.isClosed() {
		return Order{}, ErrClosed
	}
	o, err := s.orders.Pay(ctx, id)
	if err != nil {
		return o, err
	}
	s.disarm(id)
	return o, nil
}

// disarm cancels the order's timeout, if this replica holds one.
func (s *Service) disarm(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.armed[id]; ok {
		t.Cancel()
		delete(s.armed, id)
	}
}

// Close stops listening and the wheel, and waits for the cancellations it
// started. Orders still pending stay pending in the database, held by this
// replica for its next Start, or for the others once their leases run out.
// It does not close the database.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.unlisten != nil {
		s.unlisten()
	}
	s.timer.Stop()
}

func (s *Service) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// arm schedules the order's cancellation d from now. The lock is held
// across scheduling so that the task, which removes the entry, never runs
// before it is made.
func (s *Service) arm(id int64, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t, err := s.timer.AfterFunc(d, func() { s.expire(id) })
	if err != nil {
		return err
	}
	s.armed[id] = t
	return nil
}

// expire runs when an order's timeout fires: it asks the database to cancel
// the order, which it does only if the order is still pending, due and held
// here. After a database error it tries again later.
func (s *Service) expire(id int64) {
	s.mu.Lock()
	delete(s.armed, id)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch _, err := s.settle(ctx, id); {
	case errors.Is(err, ErrNotFound):
		s.log.Warn("armed order is gone from the database", "order", id)
	case err != nil:
		// Still pending in the database: try again later; a restart would
		// arm it again anyway.
		s.log.Error("cancelling order failed; retrying", "order", id, "after", s.cfg.retryAfter, "err", err)
		s.rearm(id, s.cfg.retryAfter)
	}
}

// settle cancels the order if the database agrees, and arms it again if it
// is not due yet on the database's clock (the wall clock stepped back since
// it was armed). Paid, already cancelled, or held by another replica: there
// is nothing left to do.
func (s *Service) settle(ctx context.Context, id int64) (cancelled bool, err error) {
	c, err := s.orders.Cancel(ctx, id)
	switch {
	case err != nil:
		return false, err
	case c.Cancelled:
		s.cfg.onCancel(c.Order)
	case c.DueIn > 0:
		s.rearm(id, c.DueIn)
	}
	return c.Cancelled, nil
}

func (s *Service) rearm(id int64, d time.Duration) {
	if err := s.arm(id, d); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, hashedwheel.ErrStopped) {
		s.log.Error("re-arming order failed; it will be armed at the next start", "order", id, "err", err)
	}
}

// claimIn arms a claim d from now, unless one is armed sooner: claims come
// when the database or another replica says one may find an order, at
// most one a tick.
func (s *Service) claimIn(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.claim != nil {
		if s.claim.Deadline().Sub(s.timer.Now()) <= d || s.claim.Reset(d) {
			return
		}
	}
	s.claimGen++
	gen := s.claimGen
	t, err := s.timer.AfterFunc(d, func() { s.claimNow(gen) })
	if err != nil {
		if !errors.Is(err, hashedwheel.ErrStopped) {
			s.log.Error("arming a claim failed", "err", err)
		}
		return
	}
	s.claim = t
}

// claimNow takes the orders the database says this replica is now to
// hold and arms them.
func (s *Service) claimNow(gen uint64) {
	s.mu.Lock()
	if s.claimGen == gen {
		s.claim = nil
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.orders.Claim(ctx, false)
	if err != nil {
		s.log.Error("claiming orders failed; retrying", "after", s.cfg.retryAfter, "err", err)
		s.claimIn(s.cfg.retryAfter)
		return
	}
	for _, cl := range c.Claims {
		s.rearm(cl.ID, cl.DueIn)
	}
	s.claimed(c)
}

// claimed reports the orders a claim cancelled, and arms the next claim.
func (s *Service) claimed(c Claimed) {
	for _, o := range c.Cancelled {
		s.cfg.onCancel(o)
	}
	if !c.Never {
		s.claimIn(c.Next)
	}
}
