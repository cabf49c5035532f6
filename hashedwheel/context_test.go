package hashedwheel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The contexts of WithDeadline are tested here in the manner of the context
// package's own tests, on a real clock with a 1ms tick: real time is what
// a context's deadline is about. Bounds are generous for a loaded machine.

// contextTimer returns a started timer with a 1ms tick, stopped at the
// end of the test.
func contextTimer(tb testing.TB, opts ...Option) *HashedWheelTimer {
	return startTimer(tb, append([]Option{WithTickDuration(time.Millisecond)}, opts...)...)
}

// within waits for c to be done, failing after bound.
func within(tb testing.TB, c context.Context, bound time.Duration, what string) {
	tb.Helper()
	select {
	case <-c.Done():
	case <-time.After(bound):
		require.Fail(tb, fmt.Sprintf("%s: not done within %v", what, bound))
	}
}

// cancellableParent is a parent as a server's request context is.
func cancellableParent(tb testing.TB) (context.Context, context.CancelCauseFunc) {
	parent, cancel := context.WithCancelCause(context.Background())
	tb.Cleanup(func() { cancel(nil) })
	return parent, cancel
}

func TestContextDeadlineExpires(t *testing.T) {
	h := contextTimer(t)
	parent, _ := cancellableParent(t)
	start := time.Now()
	deadline := start.Add(20 * time.Millisecond)
	c, cancel := h.WithDeadline(parent, deadline)
	defer cancel()
	d, ok := c.Deadline()
	require.True(t, ok)
	assert.True(t, d.Equal(deadline), "Deadline is the one given")
	assert.NoError(t, c.Err())
	assert.Equal(t, int64(1), h.PendingTimeouts(), "a live context holds one pending timeout")
	within(t, c, 5*time.Second, "context past its deadline")
	assert.False(t, time.Now().Before(deadline), "done before its deadline")
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	assert.Equal(t, context.DeadlineExceeded, context.Cause(c))
	assert.NoError(t, parent.Err(), "the parent is untouched")
	cancel()
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded, "cancel after the deadline changes nothing")
}

func TestContextTimeoutCause(t *testing.T) {
	h := contextTimer(t)
	cause := errors.New("backend too slow")
	c, cancel := h.WithTimeoutCause(context.Background(), 5*time.Millisecond, cause)
	defer cancel()
	within(t, c, 5*time.Second, "context past its deadline")
	assert.Equal(t, context.DeadlineExceeded, c.Err())
	assert.Equal(t, cause, context.Cause(c))
}

func TestContextCancelFunc(t *testing.T) {
	h := contextTimer(t)
	parent, _ := cancellableParent(t)
	c, cancel := h.WithTimeout(parent, time.Hour)
	cancel()
	assert.Equal(t, context.Canceled, c.Err())
	assert.Equal(t, context.Canceled, context.Cause(c))
	cancel() // idempotent
	assert.Equal(t, context.Canceled, c.Err())
	assert.Eventually(t, func() bool { return h.PendingTimeouts() == 0 }, 5*time.Second, time.Millisecond,
		"the CancelFunc releases the timeout")
	assert.NoError(t, parent.Err())
}

// TestContextParentCancelPropagatesAtOnce: cancelling the parent cancels
// the context before the parent's cancel returns, with the parent's error
// and cause, and with no goroutine of its own.
func TestContextParentCancelPropagatesAtOnce(t *testing.T) {
	h := contextTimer(t)
	parent, cancelParent := cancellableParent(t)
	c, cancel := h.WithTimeout(parent, time.Hour)
	defer cancel()
	cause := errors.New("client went away")
	cancelParent(cause)
	assert.Equal(t, context.Canceled, c.Err(), "at once")
	assert.Equal(t, cause, context.Cause(c))
	select {
	case <-c.Done():
	default:
		require.Fail(t, "Done not closed")
	}
}

// TestContextParentDeadlineError: a parent that is itself past its deadline
// passes context.DeadlineExceeded on.
func TestContextParentDeadlineError(t *testing.T) {
	h := contextTimer(t)
	parent, cancelParent := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelParent()
	c, cancel := h.WithTimeout(parent, time.Hour)
	defer cancel()
	d, _ := c.Deadline()
	pd, _ := parent.Deadline()
	assert.Equal(t, pd, d, "the parent's earlier deadline is kept")
	within(t, c, 5*time.Second, "child of an expired parent")
	assert.Equal(t, context.DeadlineExceeded, c.Err())
}

func TestContextEarlierParentDeadlineIsKept(t *testing.T) {
	h := contextTimer(t)
	parent, cancelParent := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancelParent()
	c, cancel := h.WithTimeout(parent, time.Hour)
	defer cancel()
	d, ok := c.Deadline()
	pd, _ := parent.Deadline()
	require.True(t, ok)
	assert.Equal(t, pd, d)
	assert.Zero(t, h.PendingTimeouts(), "no timeout for a deadline that cannot come first")
}

func TestContextDeadlineAlreadyPast(t *testing.T) {
	h := contextTimer(t)
	c, cancel := h.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	select {
	case <-c.Done():
	default:
		require.Fail(t, "not done at once")
	}
	assert.Equal(t, context.DeadlineExceeded, c.Err())
	assert.Equal(t, context.DeadlineExceeded, context.Cause(c))
	assert.Zero(t, h.Stats().Scheduled)
}

// ctxKey is the type of the context values of these tests.
type ctxKey string

// TestContextDerivedContextsSeeTheDeadline: children made with the context
// package see the deadline's error and cause, and values reach the parent.
func TestContextDerivedContextsSeeTheDeadline(t *testing.T) {
	h := contextTimer(t)
	parent := context.WithValue(context.Background(), ctxKey("request"), "request-42")
	cause := errors.New("slow")
	c, cancel := h.WithTimeoutCause(parent, 10*time.Millisecond, cause)
	defer cancel()
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	value := context.WithValue(c, ctxKey("k"), "v")
	grandchild, cancelGrandchild := context.WithTimeout(child, time.Hour)
	defer cancelGrandchild()
	assert.Equal(t, "request-42", c.Value(ctxKey("request")))
	assert.Equal(t, "request-42", grandchild.Value(ctxKey("request")))
	assert.Equal(t, "v", value.Value(ctxKey("k")))
	d, _ := grandchild.Deadline()
	wd, _ := c.Deadline()
	assert.Equal(t, wd, d, "a later deadline of a child gives way to the context's")

	for name, ctx := range map[string]context.Context{"WithCancel": child, "WithValue": value, "WithTimeout": grandchild} {
		within(t, ctx, 5*time.Second, name)
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), name)
		assert.Equal(t, cause, context.Cause(ctx), name)
	}
	// A child made once the context is done is done at once, the same way.
	late, cancelLate := context.WithCancel(c)
	defer cancelLate()
	assert.Equal(t, context.DeadlineExceeded, late.Err())
	assert.Equal(t, cause, context.Cause(late))
}

// TestContextDerivedContextsSeeTheCancel: children see a cancellation by
// the CancelFunc, or by the parent, with its cause.
func TestContextDerivedContextsSeeTheCancel(t *testing.T) {
	h := contextTimer(t)
	parent, cancelParent := cancellableParent(t)
	c, cancel := h.WithTimeout(parent, time.Hour)
	defer cancel()
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	cause := errors.New("shutting down")
	cancelParent(cause)
	within(t, child, 5*time.Second, "child")
	assert.Equal(t, context.Canceled, child.Err())
	assert.Equal(t, cause, context.Cause(child))
}

func TestContextAfterFunc(t *testing.T) {
	h := contextTimer(t)
	c, cancel := h.WithTimeout(context.Background(), time.Hour)
	called := make(chan struct{})
	context.AfterFunc(c, func() { close(called) })
	stopped := context.AfterFunc(c, func() { assert.Fail(t, "a stopped AfterFunc ran") })
	assert.True(t, stopped())
	cancel()
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		require.Fail(t, "AfterFunc not called")
	}
}

// TestContextFallsBackWhenStoppedOrFull: at the pending limit, or once the
// timer is stopped, the context is the context package's, still honouring
// its deadline, and Stats counts it.
func TestContextFallsBackWhenStoppedOrFull(t *testing.T) {
	h := contextTimer(t, WithMaxPendingTimeouts(1))
	first, cancelFirst := h.WithTimeout(context.Background(), time.Hour)
	defer cancelFirst()
	full, cancelFull := h.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelFull()
	within(t, full, 5*time.Second, "context made at the limit")
	assert.Equal(t, context.DeadlineExceeded, full.Err())
	assert.Equal(t, uint64(1), h.Stats().ContextFallbacks)
	assert.NoError(t, first.Err())

	h.Stop()
	stopped, cancelStopped := h.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelStopped()
	within(t, stopped, 5*time.Second, "context made after Stop")
	assert.Equal(t, context.DeadlineExceeded, stopped.Err())
}

// TestContextOutlivesStop: Stop does not return a live context's timeout
// as its own; the context still ends at its deadline, never before, and
// its CancelFunc still works.
func TestContextOutlivesStop(t *testing.T) {
	h := contextTimer(t)
	start := time.Now()
	c, cancel := h.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	other, cancelOther := h.WithTimeout(context.Background(), time.Hour)
	plain := mustSchedule(t, h, noopTask, time.Hour)
	assert.Equal(t, []Timeout{plain}, h.Stop(), "Stop returns only its own timeouts")
	assert.NoError(t, c.Err(), "not cancelled by Stop")
	within(t, c, 5*time.Second, "context live at Stop")
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "not before its deadline")
	assert.Equal(t, context.DeadlineExceeded, c.Err())
	cancelOther()
	assert.Equal(t, context.Canceled, other.Err())
	s := h.Stats()
	assert.Equal(t, uint64(2), s.ContextFallbacks)
	statsBalance(t, s)
}

// TestContextRace makes, cancels and lets expire contexts from many
// goroutines, with their parents cancelled at random, under the race
// detector: each ends once, with an error that matches how.
func TestContextRace(t *testing.T) {
	h := contextTimer(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				parent, cancelParent := context.WithCancelCause(context.Background())
				c, cancel := h.WithTimeout(parent, time.Duration(i%3)*time.Millisecond)
				child, cancelChild := context.WithCancel(c)
				switch (g + i) % 3 {
				case 0:
					cancel()
				case 1:
					cancelParent(errors.New("gone"))
				}
				<-child.Done() // not the test's goroutine: assert, not require
				assert.Contains(t, []error{context.Canceled, context.DeadlineExceeded}, c.Err(), "Err()")
				assert.Equal(t, c.Err(), child.Err(), "the child's Err")
				cancelChild()
				cancel()
				cancelParent(nil)
			}
		}()
	}
	wg.Wait()
	assert.Eventually(t, func() bool { return h.PendingTimeouts() == 0 }, 5*time.Second, time.Millisecond)
	statsBalance(t, h.Stats())
}

func TestContextString(t *testing.T) {
	h := contextTimer(t)
	c, cancel := h.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	assert.Contains(t, c.(interface{ String() string }).String(), "hashedwheel.WithDeadline(context.Background")
}
