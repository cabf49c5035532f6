package hashedwheel

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/goid"
)

// WithTimeout returns WithDeadline(parent, now.Add(d)), now read on the
// timer's clock: the deadline is the timer's, to 8ns.
func (h *HashedWheelTimer) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return h.WithTimeoutCause(parent, d, nil)
}

// farDelay is a delay beyond which now + delay may saturate on the timer's
// clock: WithTimeout then takes the deadline from the wall clock.
const farDelay = math.MaxInt64 / 2

// WithTimeoutCause is WithTimeout, with cause as the context's cause once
// its deadline passes.
func (h *HashedWheelTimer) WithTimeoutCause(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic(errNilParent)
	}
	if d <= 0 || d > farDelay {
		return h.WithDeadlineCause(parent, h.wallNow().Add(d), cause)
	}
	if left, ok := h.timeLeft(parent); ok && left < d {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	if parent.Err() != nil {
		return h.WithDeadlineCause(parent, h.wallNow().Add(d), cause)
	}
	c := &wheelContext{}
	if cause != nil {
		c.cause = boxed(cause)
	}
	if err := h.arm(c, parent, d); err != nil {
		return h.fallback(parent, h.wallNow().Add(d), d, cause, err)
	}
	return c, c.cancel
}

// WithDeadline is context.WithDeadline with the deadline enforced by the
// timer: Done is closed at the first tick end at or after the deadline,
// never before it, when the CancelFunc is called, or when parent is done,
// whichever comes first; Err and context.Cause then report as the context
// package's do, on it and on its derived contexts. The deadline is read on
// the timer's clock (WithClock). A parent with an earlier deadline keeps
// it; a deadline past or a parent done gives a context done at once,
// holding no timeout. A nil parent panics.
//
// The context holds one pending timeout until its deadline or its
// idempotent CancelFunc, which releases it at once: call it when the work
// is done (parent's cancellation releases it only for a context with
// derived contexts). A live context costs no goroutine; the CancelFunc and
// the deadline reach directly derived contexts before they return,
// parent's cancellation through one goroutine, contexts derived through a
// wrapper (context.WithValue) through one each (docs/differences.md). A
// stopped or full timer returns a context whose deadline its clock keeps
// (a runtime timer, or a clock.Fake's AfterFunc), counted in
// Stats.ContextFallbacks; Stop moves a live context's deadline there too.
func (h *HashedWheelTimer) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return h.WithDeadlineCause(parent, deadline, nil)
}

// WithDeadlineCause is WithDeadline, with cause as the context's cause
// once its deadline passes; a nil cause means context.DeadlineExceeded.
func (h *HashedWheelTimer) WithDeadlineCause(parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic(errNilParent)
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(deadline) {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	dc := &deadlineContext{deadline: deadline}
	if cause != nil {
		dc.cause = boxed(cause)
	}
	delay := deadline.Sub(h.wallNow())
	if delay <= 0 || parent.Err() != nil {
		return dc, h.unarmed(&dc.wheelContext, parent, delay <= 0)
	}
	if err := h.arm(&dc.wheelContext, parent, delay); err != nil {
		return h.fallback(parent, deadline, delay, cause, err)
	}
	return dc, dc.cancel
}

// timeLeft returns the time until parent's deadline, if it has one: on the
// monotonic clock for this timer's contexts, whose wall deadline a step of
// the wall clock would skew; on the wall clock otherwise.
func (h *HashedWheelTimer) timeLeft(parent context.Context) (time.Duration, bool) {
	var c *wheelContext
	switch p := parent.(type) {
	case *wheelContext:
		c = p
	case *deadlineContext:
		c = &p.wheelContext
	}
	if c != nil && c.timeout.timer == h && deadlineOf(c.timeout.word.Load()) != 0 { // armed
		return c.timeout.remaining(), true
	}
	cur, ok := parent.Deadline()
	if !ok {
		return 0, false
	}
	return cur.Sub(h.wallNow()), true
}

// fallback returns, for a context's timeout the timer refused with err, a
// context whose deadline the clock's AfterFunc keeps; in a testing/synctest
// bubble the timer may not be used in, the context package's.
func (h *HashedWheelTimer) fallback(parent context.Context, deadline time.Time, delay time.Duration, cause, err error) (context.Context, context.CancelFunc) {
	if errors.Is(err, ErrSynctestBubble) {
		return context.WithDeadlineCause(parent, deadline, cause)
	}
	dc := &deadlineContext{deadline: deadline}
	if cause != nil {
		dc.cause = boxed(cause)
	}
	cancel := h.unarmed(&dc.wheelContext, parent, false)
	stop := h.clock.AfterFunc(delay, dc.expire)
	return dc, func() {
		stop()
		cancel()
	}
}

// errNilParent is the panic of a nil parent, in the context package's words.
const errNilParent = "cannot create context from nil parent"

// Now returns the current time on the timer's clock (WithClock), on which
// the deadlines it reports are: time.Now() by default, a clock.Fake's in a
// test.
func (h *HashedWheelTimer) Now() time.Time { return h.wallNow() }

// wallNow reads the timer's clock, setting up a zero HashedWheelTimer first.
func (h *HashedWheelTimer) wallNow() time.Time {
	if h.state.Load() == timerInit {
		h.startMu.Lock()
		if h.shards == nil && goid.Bubble() != h.bubble {
			// A zero timer touched first in a testing/synctest bubble: set
			// nothing up there (Start refuses it).
			h.startMu.Unlock()
			return time.Now()
		}
		h.initZero()
		h.startMu.Unlock()
	}
	return h.clock.Now()
}

// arm joins c to parent and schedules its timeout, due after delay. If the
// timer refuses it, arm leaves nothing behind, counts a fallback and
// returns the timer's error.
func (h *HashedWheelTimer) arm(c *wheelContext, parent context.Context, delay time.Duration) error {
	c.inner, c.cancelInner = context.WithCancelCause(parent)
	c.timeout.task = c
	if err := h.scheduleTimeout(&c.timeout, delay, 0); err != nil {
		c.cancelInner(nil)
		h.counters.contextFallbacks.Add(1)
		return err
	}
	return nil
}

// unarmed joins c to parent without a timeout, for a context done at once
// (expired: its deadline has passed), and returns the CancelFunc.
func (h *HashedWheelTimer) unarmed(c *wheelContext, parent context.Context, expired bool) context.CancelFunc {
	c.inner, c.cancelInner = context.WithCancelCause(parent)
	c.timeout.timer, c.timeout.task = h, c
	c.timeout.word.Store(stateExpired) // never scheduled: its Cancel changes nothing
	if expired {
		c.expire()
	}
	return c.cancel
}

// errDeadlinePassed is the inner context's cause once the deadline passes,
// so that Err can tell a deadline from a cancellation; users never see it.
var errDeadlinePassed = errors.New("hashedwheel: deadline passed")

// wheelContext is the context of WithTimeout and WithDeadline: inner, a
// context.WithCancelCause child of the parent, joins the parent without a
// goroutine; the deadline is a timeout in the same allocation, whose task
// cancels inner with errDeadlinePassed. Derived contexts must see
// DeadlineExceeded, not inner's Canceled, so Value hides inner from them:
// they join through AfterFunc instead (context_afterfunc.go).
type wheelContext struct {
	inner       context.Context
	cancelInner context.CancelCauseFunc
	cause       *error                        // the cause once the deadline passes; nil: DeadlineExceeded
	extras      atomic.Pointer[contextExtras] // made on first need: derived contexts, or Stop
	deadline    atomic.Pointer[time.Time]     // Deadline's, once fixed
	timeout     timeout
}

// Deadline returns the deadline fixed at its first call, the wall clock
// then plus what remains of the timeout, so that a context nobody asks
// reads no wall clock.
func (c *wheelContext) Deadline() (time.Time, bool) {
	if c.deadline.Load() == nil {
		d := c.timeout.Deadline()
		c.deadline.CompareAndSwap(nil, &d) // or another call fixed it first
	}
	return *c.deadline.Load(), true
}

// boxed returns a pointer to err: a context keeps a cause in a word, so
// that it fits the 112-byte size class.
func boxed(err error) *error { return &err }

// deadlineContext is the context of WithDeadline and of the fallbacks,
// which report the very deadline given.
type deadlineContext struct {
	wheelContext
	deadline time.Time
}

func (c *deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineContext) String() string { return c.describe(c.deadline) }

func (c *wheelContext) String() string {
	d, _ := c.Deadline()
	return c.describe(d)
}

// describe names the context as the context package does:
// <parent>.WithDeadline(<deadline> [<time left>]).
func (c *wheelContext) describe(deadline time.Time) string {
	parent := strings.TrimSuffix(c.inner.(interface{ String() string }).String(), ".WithCancel")
	return parent + ".WithDeadline(" + deadline.String() + " [" +
		deadline.Sub(c.timeout.timer.clock.Now()).String() + "])"
}

func (c *wheelContext) Done() <-chan struct{} { return c.inner.Done() }

// Err returns nil until the context is done, then DeadlineExceeded or the
// error of the cancellation that came first.
func (c *wheelContext) Err() error {
	err := c.inner.Err()
	if err != nil && context.Cause(c.inner) == errDeadlinePassed {
		return context.DeadlineExceeded
	}
	return err
}

// Value returns parent's value for key, except for the context package's
// key of cancellable ancestors: nil while not done, so that derived
// contexts join through AfterFunc; once done, a done context carrying the
// cause, if it differs from Err, for context.Cause.
func (c *wheelContext) Value(key any) any {
	if !isCancelCtxKey(key) {
		return c.inner.Value(key)
	}
	err := c.Err()
	if err == nil {
		return nil
	}
	cause := context.Cause(c.inner)
	if cause == errDeadlinePassed {
		cause = context.DeadlineExceeded
		if c.cause != nil {
			cause = *c.cause
		}
	}
	if cause == err {
		return nil // context.Cause falls back to Err
	}
	// Made on each (rare) call, so that live contexts stay small.
	done, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return done.Value(key)
}

// Run is the task of the context's timeout.
func (c *wheelContext) Run(Timeout) { c.expire() }

func (c *wheelContext) expire() { c.end(errDeadlinePassed) }

// cancel is the CancelFunc: it releases the timeout, or the clock's timer
// Stop moved it to, and cancels the context.
func (c *wheelContext) cancel() {
	c.timeout.Cancel()
	if x := c.end(nil); x != nil {
		x.stopMoved()
	}
}

// end cancels inner with cause, unless done already, then calls the
// derived contexts' functions on this goroutine, Err and Cause final. It
// returns the extras, if any.
func (c *wheelContext) end(cause error) *contextExtras {
	x := c.extras.Load()
	if x != nil {
		x.stopWatch() // the calls below are made here, not by the watch's goroutine
	}
	c.cancelInner(cause)
	if x == nil {
		if x = c.extras.Load(); x == nil {
			return nil // a registration from now on finds the context done
		}
	}
	x.run()
	return x
}

// outliveStop moves the deadline of a context live at Stop to the clock's
// AfterFunc, which the CancelFunc stops.
func (c *wheelContext) outliveStop(*timeout) {
	x := c.loadExtras()
	x.mu.Lock()
	defer x.mu.Unlock()
	if c.inner.Err() != nil {
		return // done meanwhile: its CancelFunc may already have looked for the timer
	}
	x.moved = c.timeout.timer.clock.AfterFunc(c.timeout.remaining(), c.expire)
	c.timeout.timer.counters.contextFallbacks.Add(1)
}

// cancelCtxProbe answers itself for the context package's key of
// cancellable contexts, and so recognises it.
var cancelCtxProbe, _ = context.WithCancel(context.Background())

// isCancelCtxKey reports whether key is the context package's key by which
// context.Cause and derived contexts find a cancellable ancestor.
func isCancelCtxKey(key any) bool {
	if _, ok := key.(*int); !ok {
		return false
	}
	return cancelCtxProbe.Value(key) == cancelCtxProbe
}
