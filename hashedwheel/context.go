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

// WithTimeout returns WithDeadline(parent, h.Now().Add(d)).
func (h *HashedWheelTimer) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return h.WithTimeoutCause(parent, d, nil)
}

// farDelay is the delay past which WithTimeout reads the wall clock, lest
// now + d saturate.
const farDelay = math.MaxInt64 / 2

// WithTimeoutCause is WithTimeout with cause as the cause at the deadline.
func (h *HashedWheelTimer) WithTimeoutCause(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic(errNilParent)
	}
	if d <= 0 || d > farDelay || parent.Err() != nil {
		return h.WithDeadlineCause(parent, h.Now().Add(d), cause)
	}
	if left, ok := h.timeLeft(parent); ok && left < d {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	c := &wheelContext{cause: boxed(cause)}
	if err := h.arm(c, parent, d); err != nil {
		return h.fallback(parent, h.Now().Add(d), d, cause, err)
	}
	return c, c.cancelFunc()
}

// WithDeadline is context.WithDeadline enforced by the timer: Done is
// closed at the first tick end at or after the deadline on the timer's
// clock, never before, when the CancelFunc is called, or when parent is
// done, whichever comes first; Err and context.Cause report as the context
// package's. A parent's earlier deadline is kept; a past deadline or a
// done parent gives a context done at once. A nil parent panics. The
// context holds a pending timeout until its deadline or CancelFunc: call
// that when done. It costs no goroutine (docs/differences.md). A stopped
// or full timer's contexts, and those live at Stop, are kept by the
// clock's AfterFunc (Stats.ContextFallbacks).
func (h *HashedWheelTimer) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return h.WithDeadlineCause(parent, deadline, nil)
}

// WithDeadlineCause is WithDeadline with cause as the cause at the
// deadline; nil means DeadlineExceeded.
func (h *HashedWheelTimer) WithDeadlineCause(parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic(errNilParent)
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(deadline) {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	dc := &deadlineContext{wheelContext: wheelContext{cause: boxed(cause)}, deadline: deadline}
	delay := deadline.Sub(h.Now())
	if delay <= 0 || parent.Err() != nil {
		return dc, h.unarmed(&dc.wheelContext, parent, delay <= 0)
	}
	if err := h.arm(&dc.wheelContext, parent, delay); err != nil {
		return h.fallback(parent, deadline, delay, cause, err)
	}
	return dc, dc.cancelFunc()
}

// timeLeft returns the time until parent's deadline, if any: monotonic for
// this timer's contexts, whose wall deadline a clock step would skew.
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
	return cur.Sub(h.Now()), true
}

// fallback returns a context for a timeout the timer refused with err.
func (h *HashedWheelTimer) fallback(parent context.Context, deadline time.Time, delay time.Duration, cause, err error) (context.Context, context.CancelFunc) {
	if errors.Is(err, ErrSynctestBubble) {
		return context.WithDeadlineCause(parent, deadline, cause)
	}
	dc := &deadlineContext{wheelContext: wheelContext{cause: boxed(cause)}, deadline: deadline}
	cancel := h.unarmed(&dc.wheelContext, parent, false)
	stop := h.clock.AfterFunc(delay, dc.expire)
	return dc, func() {
		stop()
		cancel()
	}
}

const errNilParent = "cannot create context from nil parent"

// Now returns the time on the timer's clock, on which its deadlines are.
func (h *HashedWheelTimer) Now() time.Time {
	if h.state.Load() == timerInit {
		h.startMu.Lock()
		if h.shards == nil && goid.Bubble() != h.bubble {
			// A zero timer first used in a bubble: set nothing up there.
			h.startMu.Unlock()
			return time.Now()
		}
		h.initZero()
		h.startMu.Unlock()
	}
	return h.clock.Now()
}

// arm joins c to parent and schedules its timeout, or counts a fallback.
func (h *HashedWheelTimer) arm(c *wheelContext, parent context.Context, delay time.Duration) error {
	c.inner, c.cancelInner = context.WithCancelCause(parent)
	c.timeout.task = c
	if _, err := h.scheduleTimeout(&c.timeout, delay, 0); err != nil {
		c.cancelInner(nil)
		h.counters.contextFallbacks.Add(1)
		return err
	}
	return nil
}

// unarmed joins c to parent without a timeout, and returns the CancelFunc.
func (h *HashedWheelTimer) unarmed(c *wheelContext, parent context.Context, expired bool) context.CancelFunc {
	c.inner, c.cancelInner = context.WithCancelCause(parent)
	c.timeout.timer, c.timeout.task = h, c
	c.timeout.word.Store(stateExpired) // never scheduled: its Cancel changes nothing
	if expired {
		c.expire()
	}
	return c.cancelFunc()
}

// errDeadlinePassed is inner's cause at the deadline, for Err.
var errDeadlinePassed = errors.New("hashedwheel: deadline passed")

// wheelContext is the context of WithTimeout and WithDeadline: inner, a
// child of the parent, joins it without a goroutine; the timeout, in the
// same allocation, cancels inner at the deadline. Value hides inner from
// derived contexts so that they see DeadlineExceeded, not Canceled: they
// join through AfterFunc (context_afterfunc.go).
type wheelContext struct {
	// The closure of c.cancel, first: the context is its own CancelFunc
	// (context_cancelfunc.go).
	cancelCode  uintptr
	self        *wheelContext
	inner       context.Context
	cancelInner context.CancelCauseFunc
	cause       *error // at the deadline; nil: DeadlineExceeded
	extras      atomic.Pointer[contextExtras]
	deadline    atomic.Pointer[time.Time] // once fixed
	timeout     timeout
}

// Deadline is fixed at its first call: a context nobody asks reads no wall
// clock.
func (c *wheelContext) Deadline() (time.Time, bool) {
	if c.deadline.Load() == nil {
		d := c.timeout.Deadline()
		c.deadline.CompareAndSwap(nil, &d)
	}
	return *c.deadline.Load(), true
}

// boxed keeps a cause in a word, nil for none: a context fits the
// 128-byte size class.
func boxed(err error) *error {
	if err == nil {
		return nil
	}
	p := new(error) // allocated only here: &err would move err to the heap on every call
	*p = err
	return p
}

// deadlineContext reports the very deadline given.
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

// describe names the context as the context package does.
func (c *wheelContext) describe(deadline time.Time) string {
	parent := strings.TrimSuffix(c.inner.(interface{ String() string }).String(), ".WithCancel")
	return parent + ".WithDeadline(" + deadline.String() + " [" +
		deadline.Sub(c.timeout.timer.clock.Now()).String() + "])"
}

func (c *wheelContext) Done() <-chan struct{} { return c.inner.Done() }

// Err returns DeadlineExceeded, or the cancellation's error, once done.
func (c *wheelContext) Err() error {
	err := c.inner.Err()
	if err != nil && context.Cause(c.inner) == errDeadlinePassed {
		return context.DeadlineExceeded
	}
	return err
}

// Value hides the key of cancellable ancestors while not done, so that
// derived contexts use AfterFunc; once done, it carries the cause.
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
	done, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return done.Value(key)
}

func (c *wheelContext) Run(Timeout) { c.expire() }

func (c *wheelContext) expire() { c.end(errDeadlinePassed) }

func (c *wheelContext) cancel() {
	c.timeout.Cancel()
	if x := c.end(nil); x != nil {
		x.stopMoved()
	}
}

// end cancels inner, then calls the derived contexts' functions on this
// goroutine, Err and Cause final.
func (c *wheelContext) end(cause error) *contextExtras {
	x := c.extras.Load()
	if x != nil {
		x.stopWatch() // the calls are made here, not by the watch
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

// outliveStop moves a live context's deadline to the clock's AfterFunc.
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

// cancelCtxProbe answers itself for the key of cancellable contexts.
var cancelCtxProbe, _ = context.WithCancel(context.Background())

func isCancelCtxKey(key any) bool {
	_, ok := key.(*int)
	return ok && cancelCtxProbe.Value(key) == cancelCtxProbe
}
