package hashedwheel

import (
	"context"
	"errors"
	"time"
)

// WithTimeout returns WithDeadline(parent, time.Now().Add(d)), reading
// the clock once: the deadline is the timer's, to 8ns.
func (h *HashedWheelTimer) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return h.WithTimeoutCause(parent, d, nil)
}

// WithTimeoutCause is WithTimeout, with cause as the context's cause once
// its deadline passes.
func (h *HashedWheelTimer) WithTimeoutCause(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return h.withDeadline(parent, time.Time{}, d, cause)
}

// WithDeadline returns a copy of parent whose deadline is no later than
// deadline, as context.WithDeadline does, except that the timer enforces
// the deadline at its resolution: Done is closed at the first tick end
// after the deadline, never before it, or when the returned CancelFunc is
// called, or when parent's Done is closed, whichever happens first.
//
// Deadline reports deadline. Once it has passed, Err returns
// context.DeadlineExceeded and context.Cause returns it too; contexts
// derived from the returned one see the same. Cancelling parent cancels
// the context at once, with parent's error and cause, with no goroutine
// per context. A parent whose deadline is earlier keeps it, as with
// context.WithDeadline, and a deadline already past returns a context that
// is already done.
//
// The context holds one pending timeout of the timer until it is done or
// cancelled: calling the CancelFunc, which is idempotent, releases the
// timeout at once and detaches the context from parent, so call it as
// soon as the work is done, as with the context package. While the timer
// is stopped, or at its WithMaxPendingTimeouts limit, WithDeadline returns
// context.WithDeadline's context instead, whose deadline a runtime timer
// keeps; Stats counts those in ContextFallbacks. A context still live at
// Stop outlives it the same way: Stop moves its deadline to a runtime
// timer and does not return its timeout.
func (h *HashedWheelTimer) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return h.WithDeadlineCause(parent, deadline, nil)
}

// WithDeadlineCause is WithDeadline, with cause as the context's cause
// once its deadline passes; a nil cause means context.DeadlineExceeded.
func (h *HashedWheelTimer) WithDeadlineCause(parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc) {
	return h.withDeadline(parent, deadline, time.Until(deadline), cause)
}

// withDeadline makes the context of WithDeadlineCause, due after delay: at
// deadline if it is set, or else at the timer's reading of now + delay.
func (h *HashedWheelTimer) withDeadline(parent context.Context, deadline time.Time, delay time.Duration, cause error) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background() // the context package panics; we do not
	}
	if cur, ok := parent.Deadline(); ok && (deadline.IsZero() && time.Until(cur) < delay || cur.Before(deadline)) {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	if delay <= 0 { // already past: done at once, no timer needed
		if deadline.IsZero() {
			return context.WithTimeoutCause(parent, delay, cause)
		}
		return context.WithDeadlineCause(parent, deadline, cause)
	}
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	var c *wheelContext
	var ctx context.Context
	if deadline.IsZero() {
		c = &wheelContext{cause: cause}
		ctx = c
	} else {
		dc := &deadlineContext{deadline: deadline}
		c, ctx = &dc.wheelContext, dc
		c.cause = cause
	}
	c.inner, c.cancelInner = context.WithCancelCause(parent)
	c.timeout.task = c
	if err := h.scheduleTimeout(&c.timeout, delay, 0); err != nil {
		c.cancelInner(nil)
		h.counters.contextFallbacks.Add(1)
		if deadline.IsZero() {
			return context.WithTimeoutCause(parent, delay, cause)
		}
		return context.WithDeadlineCause(parent, deadline, cause)
	}
	return ctx, c.cancel
}

// errDeadlinePassed is the cause a wheelContext gives its inner context
// when its deadline passes, so that Err can tell a deadline from a
// cancellation. Users never see it: Cause reports the context's own.
var errDeadlinePassed = errors.New("hashedwheel: deadline passed")

// wheelContext is the context of WithDeadline. Its cancellation, from the
// parent or by its CancelFunc, is a context.WithCancelCause child of the
// parent, which joins the parent's children without a goroutine; its
// deadline is a timeout of the wheel, made inside the same allocation,
// whose task cancels that child with errDeadlinePassed.
//
// So that contexts derived from it see context.DeadlineExceeded rather
// than the inner context's context.Canceled, it does not let them find
// the inner context (see Value): the context package then joins them
// through its AfterFunc method.
type wheelContext struct {
	inner       context.Context
	cancelInner context.CancelCauseFunc
	cause       error // the cause once the deadline passes
	timeout     timeout
}

// Deadline returns the deadline of the context's timeout: the time of
// WithTimeout's call plus its timeout, to 8ns.
func (c *wheelContext) Deadline() (time.Time, bool) { return c.timeout.Deadline(), true }

// deadlineContext is the context of WithDeadline, which reports the very
// deadline it was given.
type deadlineContext struct {
	wheelContext
	deadline time.Time
}

func (c *deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineContext) String() string {
	return "hashedwheel.WithDeadline(" + contextName(c.inner) + ", " + c.deadline.String() +
		" [" + time.Until(c.deadline).String() + "])"
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

// AfterFunc arranges to call f in its own goroutine once the context is
// done, as context.AfterFunc does; the context package calls it to join
// derived contexts.
func (c *wheelContext) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.inner, f)
}

// Run is the task of the context's timeout: its deadline has passed.
func (c *wheelContext) Run(Timeout) { c.cancelInner(errDeadlinePassed) }

// cancel is the CancelFunc: it releases the timeout and cancels the
// context, detaching it from the parent.
func (c *wheelContext) cancel() {
	if c.timeout.timer != nil {
		c.timeout.Cancel()
	}
	c.cancelInner(nil)
}

// outliveStop moves the deadline of a context still live at Stop to a
// runtime timer.
func (c *wheelContext) outliveStop() {
	time.AfterFunc(time.Until(c.timeout.Deadline()), func() { c.cancelInner(errDeadlinePassed) })
}

func (c *wheelContext) String() string {
	d := c.timeout.Deadline()
	return "hashedwheel.WithDeadline(" + contextName(c.inner) + ", " + d.String() +
		" [" + time.Until(d).String() + "])"
}

// contextName names the inner context's parent as the context package's
// String methods do.
func contextName(inner context.Context) string {
	if s, ok := inner.(interface{ String() string }); ok {
		return s.String()
	}
	return "context"
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
