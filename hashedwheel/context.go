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

// farDelay is a delay beyond which the timer's reading of now + delay may
// saturate: WithTimeout then takes the deadline from the wall clock, so
// that Deadline reports now.Add(d) as the context package does.
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
		return h.WithDeadlineCause(parent, h.wallNow().Add(d), cause) // done at once, no timeout
	}
	c := &wheelContext{cause: cause}
	if err := h.arm(c, parent, d); err != nil {
		return h.fallback(parent, h.wallNow().Add(d), d, cause, err)
	}
	return c, c.cancel
}

// WithDeadline returns a copy of parent whose deadline is no later than
// deadline, as context.WithDeadline does, enforced by the timer: Done is
// closed at the first tick end at or after the deadline, never before it,
// when the CancelFunc is called, or when parent is done, whichever comes
// first. Err then returns context.DeadlineExceeded, or the error of the
// cancellation, and context.Cause the cause, on the context and on every
// context derived from it. The deadline is read on the timer's clock
// (WithClock) and compared with parent's as a wall time. A parent whose
// deadline is earlier keeps it; a deadline already past, or a parent
// already done, gives a context already done that holds no timeout. A nil
// parent panics, as with the context package.
//
// The context holds one pending timeout until its deadline or its
// CancelFunc, which is idempotent and releases it at once: call it as soon
// as the work is done. A cancellation of parent releases it only for a
// context with derived contexts. A live context costs no goroutine; the
// CancelFunc and the deadline reach directly derived contexts before they
// return, parent's cancellation through one goroutine, and contexts
// derived through a wrapper (context.WithValue) join through a goroutine
// each: docs/differences.md lists each difference from the context
// package. A stopped or full timer returns a context whose deadline its
// clock keeps (a runtime timer, or a clock.Fake's AfterFunc), counted in
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
	dc.cause = cause
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
// timer's monotonic clock for a context of this timer's, whose wall
// deadline a step of the wall clock since its call would skew; on the wall
// clock otherwise.
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

// fallback returns, for a timer that refused a context's timeout with
// err, a context whose deadline a timer of the clock's own keeps (the
// runtime's, or a clock.Fake's, so that it follows a fake clock as the
// wheel's contexts do); in a testing/synctest bubble the timer may not be
// used in, the context package's, on the bubble's clock.
func (h *HashedWheelTimer) fallback(parent context.Context, deadline time.Time, delay time.Duration, cause, err error) (context.Context, context.CancelFunc) {
	if errors.Is(err, ErrSynctestBubble) {
		return context.WithDeadlineCause(parent, deadline, cause)
	}
	dc := &deadlineContext{deadline: deadline}
	dc.cause = cause
	cancel := h.unarmed(&dc.wheelContext, parent, false)
	stop := h.clock.AfterFunc(delay, dc.expire)
	return dc, func() {
		stop()
		cancel()
	}
}

// errNilParent is the panic of a nil parent, in the context package's
// words: a nil parent is a programming error there too.
const errNilParent = "cannot create context from nil parent"

// Now returns the current time on the timer's clock (WithClock): the
// runtime's time.Now() by default, a clock.Fake's time in a test, so that
// code stamping times with the timer's Now follows the fake. Deadlines
// the timer reports (Timeout.Deadline, a context's Deadline) are on the
// same clock.
func (h *HashedWheelTimer) Now() time.Time { return h.wallNow() }

// wallNow reads the timer's wall clock, after setting up a zero
// HashedWheelTimer, whose clock is chosen then.
func (h *HashedWheelTimer) wallNow() time.Time {
	if h.state.Load() == timerInit {
		h.startMu.Lock()
		if h.shards == nil && goid.Bubble() != h.bubble {
			// A zero timer touched first in a testing/synctest bubble: set
			// nothing up there (Start refuses it); its default clock reads
			// time.Now.
			h.startMu.Unlock()
			return time.Now()
		}
		h.initZero()
		h.startMu.Unlock()
	}
	return h.clock.Now()
}

// arm joins c to parent and schedules its timeout, due after delay. It
// returns the timer's error, leaving nothing behind and counting a
// fallback, if the timer refused the timeout. In a testing/synctest bubble
// the timer may not be used in, the fallback is the context package's
// context, on the bubble's clock.
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

// unarmed joins c to parent without a timeout, for a context done at once:
// parent is done, or, if expired, the deadline has passed. It returns the
// CancelFunc.
func (h *HashedWheelTimer) unarmed(c *wheelContext, parent context.Context, expired bool) context.CancelFunc {
	c.inner, c.cancelInner = context.WithCancelCause(parent)
	c.timeout.timer, c.timeout.task = h, c
	c.timeout.word.Store(stateExpired) // never scheduled: its Cancel changes nothing
	if expired {
		c.expire()
	}
	return c.cancel
}

// errDeadlinePassed is the cause a wheelContext gives its inner context
// when its deadline passes, so that Err can tell a deadline from a
// cancellation. Users never see it: Cause reports the context's own.
var errDeadlinePassed = errors.New("hashedwheel: deadline passed")

// wheelContext is the context of WithTimeout and WithDeadline. Its
// cancellation, from the
// parent or by its CancelFunc, is a context.WithCancelCause child of the
// parent, which joins the parent's children without a goroutine; its
// deadline is a timeout of the wheel, made inside the same allocation,
// whose task cancels that child with errDeadlinePassed.
//
// So that contexts derived from it see context.DeadlineExceeded rather
// than the inner context's context.Canceled, it does not let them find
// the inner context (see Value): the context package then joins them
// through its AfterFunc method, whose functions the CancelFunc and the
// deadline call once Err and Cause are final (context_afterfunc.go).
type wheelContext struct {
	inner       context.Context
	cancelInner context.CancelCauseFunc
	cause       error                         // the cause once the deadline passes; nil: DeadlineExceeded
	extras      atomic.Pointer[contextExtras] // made on first need: derived contexts, or Stop
	deadline    atomic.Pointer[time.Time]     // Deadline's, once fixed
	timeout     timeout
}

// Deadline returns the deadline fixed at its first call: the wall clock
// then plus what remains of the timeout on the timer's clock, so the wall
// clock at WithTimeout's call plus the timeout, to 8ns, unless the wall
// clock stepped meanwhile. Fixed at the first call, not at WithTimeout's,
// so that a context nobody asks costs no reading of the wall clock.
func (c *wheelContext) Deadline() (time.Time, bool) {
	if c.deadline.Load() == nil {
		d := c.timeout.Deadline()
		c.deadline.CompareAndSwap(nil, &d) // or another call fixed it first
	}
	return *c.deadline.Load(), true
}

// deadlineContext is the context of WithDeadline, which reports the very
// deadline it was given, and of the fallbacks.
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

// describe names the context as the context package names its own:
// <parent>.WithDeadline(<deadline> [<time left on the timer's clock>]).
func (c *wheelContext) describe(deadline time.Time) string {
	// The inner context's String is the parent's name + ".WithCancel".
	parent := strings.TrimSuffix(c.inner.(interface{ String() string }).String(), ".WithCancel")
	return parent + ".WithDeadline(" + deadline.String() + " [" +
		deadline.Sub(c.timeout.timer.clock.Now()).String() + "])"
}

func (c *wheelContext) Done() <-chan struct{} { return c.inner.Done() }

// Err returns nil until the context is done; then context.DeadlineExceeded
// if its deadline passed first, or the error the parent or the CancelFunc
// cancelled it with.
func (c *wheelContext) Err() error {
	err := c.inner.Err()
	if err != nil && context.Cause(c.inner) == errDeadlinePassed {
		return context.DeadlineExceeded
	}
	return err
}

// Value returns parent's value for key, except for the key by which the
// context package finds a cancellable ancestor: for it, the context
// answers nil while it is not done, so that a derived context joins it
// through AfterFunc, and, once done, a done context that carries its cause
// if it differs from Err, for context.Cause.
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
		cause = c.cause
		if cause == nil {
			cause = context.DeadlineExceeded
		}
	}
	if cause == err {
		return nil // context.Cause falls back to Err
	}
	// A done context that carries the cause, for context.Cause: made on
	// each call, a rare one, so that live contexts stay small.
	done, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return done.Value(key)
}

// Run is the task of the context's timeout: its deadline has passed.
func (c *wheelContext) Run(Timeout) { c.expire() }

// expire ends the context at its deadline.
func (c *wheelContext) expire() { c.end(errDeadlinePassed) }

// cancel is the CancelFunc: it releases the timeout, or the runtime timer
// Stop moved it to, and cancels the context, detaching it from the parent.
func (c *wheelContext) cancel() {
	c.timeout.Cancel()
	if x := c.end(nil); x != nil {
		x.stopMoved()
	}
}

// end cancels the inner context with cause, unless it is done already,
// then calls the functions derived contexts registered, on this
// goroutine: they see Err and Cause final. It returns the extras, if the
// context has them.
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

// outliveStop moves the deadline of a context still live at Stop to a
// runtime timer, or to the function of a clock.Fake, which the CancelFunc
// stops.
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

// cancelCtxProbe answers its own address for the context package's key of
// cancellable contexts, and so recognises that key.
var cancelCtxProbe, _ = context.WithCancel(context.Background())

// isCancelCtxKey reports whether key is the context package's key of
// cancellable contexts, by which context.Cause and derived contexts find a
// cancellable ancestor.
func isCancelCtxKey(key any) bool {
	if _, ok := key.(*int); !ok {
		return false
	}
	return cancelCtxProbe.Value(key) == cancelCtxProbe
}
