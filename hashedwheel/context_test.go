package hashedwheel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/pool"
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

// TestContextIsItsOwnCancelFunc: each CancelFunc, the context itself seen
// as a closure, cancels its own context and no other, from WithTimeout,
// WithDeadline and a done parent alike, and costs no allocation of its own.
func TestContextIsItsOwnCancelFunc(t *testing.T) {
	require.NotZero(t, cancelCode, "the method value's closure has the layout a context mimics")
	h := contextTimer(t)
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	makers := []func() (context.Context, context.CancelFunc){
		func() (context.Context, context.CancelFunc) { return h.WithTimeout(context.Background(), time.Hour) },
		func() (context.Context, context.CancelFunc) {
			return h.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		},
		func() (context.Context, context.CancelFunc) { return h.WithDeadline(done, time.Now().Add(time.Hour)) },
	}
	for m, newContext := range makers {
		var ctxs []context.Context
		var cancels []context.CancelFunc
		for range 64 {
			c, cancel := newContext()
			ctxs, cancels = append(ctxs, c), append(cancels, cancel)
		}
		for i := 0; i < len(cancels); i += 2 {
			cancels[i]()
		}
		for i, c := range ctxs {
			switch {
			case m == 2:
				assert.Equal(t, context.Canceled, c.Err(), "context %d: done with its parent", i)
			case i%2 == 0:
				assert.Equal(t, context.Canceled, c.Err(), "maker %d, context %d: cancelled by its own CancelFunc", m, i)
			default:
				assert.NoError(t, c.Err(), "maker %d, context %d: no other context's CancelFunc cancels it", m, i)
			}
		}
		for _, cancel := range cancels {
			cancel()
		}
	}
	assert.Eventually(t, func() bool { return h.PendingTimeouts() == 0 }, 5*time.Second, time.Millisecond,
		"every CancelFunc released its timeout")

	allocs := testing.AllocsPerRun(100, func() {
		_, cancel := h.WithTimeout(context.Background(), time.Hour)
		cancel()
	})
	// The context, and the context package's child with its CancelCauseFunc.
	assert.Equal(t, 3.0, allocs, "allocations of a WithTimeout and its cancel")
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
	// Long enough for Stop, which waits for the pool, to return before it
	// under the race detector on one loaded core.
	const deadline = 300 * time.Millisecond
	start := time.Now()
	c, cancel := h.WithTimeout(context.Background(), deadline)
	defer cancel()
	other, cancelOther := h.WithTimeout(context.Background(), time.Hour)
	plain := mustSchedule(t, h, noopTask, time.Hour)
	assert.Equal(t, []Timeout{plain}, h.Stop(), "Stop returns only its own timeouts")
	assert.NoError(t, c.Err(), "not cancelled by Stop")
	within(t, c, 5*time.Second, "context live at Stop")
	assert.GreaterOrEqual(t, time.Since(start), deadline, "not before its deadline")
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

// TestContextStringAsThePackage: String names the context as the context
// package names its own, <parent>.WithDeadline(<deadline> [<left>]), the
// time left read on the timer's clock.
func TestContextStringAsThePackage(t *testing.T) {
	h, fake := newFakeTimer(t)
	start := fake.Now()
	c, cancel := h.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	d, _ := c.Deadline()
	assert.Equal(t, "context.Background.WithDeadline("+d.String()+" [30m0s])", fmt.Sprint(c))

	deadline := start.Add(time.Hour)
	parent := context.WithValue(context.Background(), ctxKey("k"), "v")
	dc, cancelDeadline := h.WithDeadline(parent, deadline)
	defer cancelDeadline()
	std, cancelStd := context.WithDeadline(parent, deadline)
	defer cancelStd()
	want := strings.Split(fmt.Sprint(std), " [")[0] + " [1h0m0s])"
	assert.Equal(t, want, fmt.Sprint(dc))

	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	assert.Equal(t, "context.stopCtx.WithCancel", fmt.Sprint(child),
		"the context package names a child joined through AfterFunc so")
}

// TestContextFollowsTheTimersClock: a context reads now on the timer's
// clock, so that on a clock.Fake it expires when the fake is advanced past
// its deadline, whatever the runtime's clock says.
func TestContextFollowsTheTimersClock(t *testing.T) {
	for name, start := range map[string]time.Time{
		"fake clock in the past":   time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		"fake clock in the future": time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		t.Run(name, func(t *testing.T) {
			fake := clock.NewFake(start)
			h := newTimerOn(t, fake, WithExecutor(pool.Inline))
			fake.WaitAsleep()
			cause := errors.New("too slow")
			timeout, cancelTimeout := h.WithTimeoutCause(context.Background(), 30*time.Minute, cause)
			defer cancelTimeout()
			deadline, cancelDeadline := h.WithDeadline(context.Background(), start.Add(10*time.Minute))
			defer cancelDeadline()
			past, cancelPast := h.WithDeadline(context.Background(), start.Add(-time.Second))
			defer cancelPast()

			d, ok := timeout.Deadline()
			assert.True(t, ok)
			assert.Equal(t, start.Add(30*time.Minute), d, "now + d on the fake clock")
			assert.Equal(t, context.DeadlineExceeded, past.Err(), "past on the fake clock")
			assert.Equal(t, uint64(2), h.Stats().Scheduled, "the context already past holds no timeout")

			fake.Advance(10*time.Minute - time.Nanosecond)
			assert.NoError(t, deadline.Err(), "never before its deadline")
			fake.Advance(testTick + time.Nanosecond)
			assert.Equal(t, context.DeadlineExceeded, deadline.Err(), "at the first tick end after it")
			assert.NoError(t, timeout.Err())
			fake.Advance(20 * time.Minute)
			assert.Equal(t, context.DeadlineExceeded, timeout.Err())
			assert.Equal(t, cause, context.Cause(timeout))
			assert.Zero(t, h.PendingTimeouts())
		})
	}
}

// TestContextDerivedContextsLearnOfTheCancelFuncAtOnce: the CancelFunc
// reaches the contexts derived directly from the context before it
// returns, as the context package's does; a child cancelled just after
// keeps the context's error and cause.
func TestContextDerivedContextsLearnOfTheCancelFuncAtOnce(t *testing.T) {
	h := contextTimer(t)
	parent, _ := cancellableParent(t)
	for range 1000 {
		c, cancel := h.WithTimeout(parent, time.Hour)
		child, cancelChild := context.WithCancelCause(c)
		timer, cancelTimer := context.WithTimeout(c, time.Hour)
		wheel, cancelWheel := h.WithTimeout(c, time.Hour)
		grandchild, cancelGrandchild := context.WithCancel(wheel)
		cancel()
		cancelChild(errors.New("too late"))
		for name, ctx := range map[string]context.Context{
			"WithCancelCause": child, "WithTimeout": timer, "wheel WithTimeout": wheel, "its child": grandchild,
		} {
			require.True(t, isClosed(ctx.Done()), name)
			require.Equal(t, context.Canceled, ctx.Err(), name)
			require.Equal(t, context.Canceled, context.Cause(ctx), name)
		}
		cancelTimer()
		cancelWheel()
		cancelGrandchild()
	}
	assert.NoError(t, parent.Err())
}

// TestContextDerivedContextsLearnOfTheDeadlineAtOnce: the deadline reaches
// the contexts derived directly from the context before the timeout's task
// returns, with context.DeadlineExceeded and the given cause; a child
// cancelled just after keeps them.
func TestContextDerivedContextsLearnOfTheDeadlineAtOnce(t *testing.T) {
	h, fake := newFakeTimer(t)
	cause := errors.New("too slow")
	c, cancel := h.WithTimeoutCause(context.Background(), time.Minute, cause)
	defer cancel()
	child, cancelChild := context.WithCancelCause(c)
	timer, cancelTimer := context.WithTimeout(c, time.Hour)
	defer cancelTimer()
	wheel, cancelWheel := h.WithTimeout(c, time.Hour)
	defer cancelWheel()
	grandchild, cancelGrandchild := context.WithCancel(wheel)
	defer cancelGrandchild()

	fake.Advance(time.Minute + testTick) // returns once the timeout's task has
	cancelChild(errors.New("too late"))
	for name, ctx := range map[string]context.Context{
		"context": c, "WithCancelCause": child, "WithTimeout": timer, "wheel WithTimeout": wheel, "its child": grandchild,
	} {
		assert.True(t, isClosed(ctx.Done()), name)
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), name)
		assert.Equal(t, cause, context.Cause(ctx), name)
	}
	assert.Zero(t, h.PendingTimeouts(), "the derived wheel context released its timeout")
}

// TestContextDerivedThroughAWrapperSeeTheDeadline: contexts derived
// through context.WithValue or a struct embedding the context see
// context.DeadlineExceeded and the cause too, and a cancellation with its
// error and cause, once they are done.
func TestContextDerivedThroughAWrapperSeeTheDeadline(t *testing.T) {
	h := contextTimer(t)
	cause := errors.New("too slow")
	parent, cancelParent := cancellableParent(t)
	expiring, cancelExpiring := h.WithTimeoutCause(context.Background(), time.Millisecond, cause)
	defer cancelExpiring()
	cancelled, cancelCancelled := h.WithTimeout(parent, time.Hour)
	defer cancelCancelled()
	wrappers := func(c context.Context) map[string]context.Context {
		return map[string]context.Context{
			"WithValue": context.WithValue(c, ctxKey("k"), "v"),
			"embedding": struct{ context.Context }{c},
		}
	}
	var children []context.Context
	for _, w := range wrappers(expiring) {
		child, cancelChild := context.WithCancel(w)
		defer cancelChild()
		children = append(children, child)
	}
	for _, ctx := range children {
		within(t, ctx, 5*time.Second, "child through a wrapper")
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		assert.Equal(t, cause, context.Cause(ctx))
	}

	children = children[:0]
	for _, w := range wrappers(cancelled) {
		child, cancelChild := context.WithCancel(w)
		defer cancelChild()
		children = append(children, child)
	}
	gone := errors.New("client went away")
	cancelParent(gone)
	for _, ctx := range children {
		within(t, ctx, 5*time.Second, "child through a wrapper")
		assert.Equal(t, context.Canceled, ctx.Err())
		assert.Equal(t, gone, context.Cause(ctx))
	}
}

// TestContextAlreadyDoneParentArmsNoTimeout: on a parent already done the
// context is done at once, with the parent's error and cause, reports its
// deadline and holds no timeout.
func TestContextAlreadyDoneParentArmsNoTimeout(t *testing.T) {
	h, fake := newFakeTimer(t)
	parent, cancelParent := context.WithCancelCause(context.Background())
	gone := errors.New("client went away")
	cancelParent(gone)
	timeout, cancelTimeout := h.WithTimeout(parent, time.Hour)
	defer cancelTimeout()
	deadline := fake.Now().Add(time.Minute)
	dc, cancelDeadline := h.WithDeadline(parent, deadline)
	defer cancelDeadline()

	d, _ := timeout.Deadline()
	assert.Equal(t, fake.Now().Add(time.Hour), d)
	d, _ = dc.Deadline()
	assert.Equal(t, deadline, d)
	for _, c := range []context.Context{timeout, dc} {
		assert.True(t, isClosed(c.Done()))
		assert.Equal(t, context.Canceled, c.Err())
		assert.Equal(t, gone, context.Cause(c))
	}
	s := h.Stats()
	assert.Zero(t, s.Scheduled, "no timeout armed")
	assert.Zero(t, s.ContextFallbacks, "nor a runtime timer")
}

// TestContextCancelAfterStopStopsTheRuntimeTimer: the CancelFunc of a
// context live at Stop stops the runtime timer Stop moved its deadline
// to, which releases the context.
func TestContextCancelAfterStopStopsTheRuntimeTimer(t *testing.T) {
	h := contextTimer(t)
	c, cancel := h.WithTimeout(context.Background(), time.Hour)
	h.Stop()
	x := c.(*wheelContext).extras.Load()
	require.NotNil(t, x)
	x.mu.Lock()
	moved := x.moved
	x.mu.Unlock()
	require.NotNil(t, moved, "Stop moved the deadline to a runtime timer")
	cancel()
	assert.False(t, moved(), "the CancelFunc stopped it, an hour before it was due")
	assert.Equal(t, context.Canceled, c.Err())
}

// TestContextNilParentPanics: a nil parent is a programming error, and
// panics with the context package's message.
func TestContextNilParentPanics(t *testing.T) {
	h, _ := newFakeTimer(t)
	const msg = "cannot create context from nil parent"
	var nilParent context.Context // a nil parent is the subject
	assert.PanicsWithValue(t, msg, func() { h.WithTimeout(nilParent, time.Hour) })
	assert.PanicsWithValue(t, msg, func() { h.WithDeadlineCause(nilParent, time.Now().Add(time.Hour), nil) })
	assert.PanicsWithValue(t, msg, func() { // the context package's, the same
		_, cancel := context.WithTimeout(nilParent, time.Hour)
		cancel()
	})
}

// TestContextDeadlineAtTheEdges: Deadline reports what the context
// package's does for the zero time and for the largest timeout.
func TestContextDeadlineAtTheEdges(t *testing.T) {
	h, fake := newFakeTimer(t)
	zero, cancelZero := h.WithDeadline(context.Background(), time.Time{})
	defer cancelZero()
	d, ok := zero.Deadline()
	assert.True(t, ok)
	assert.Equal(t, time.Time{}, d)
	assert.Equal(t, context.DeadlineExceeded, zero.Err())

	far, cancelFar := h.WithTimeout(context.Background(), math.MaxInt64)
	defer cancelFar()
	d, _ = far.Deadline()
	assert.Equal(t, fake.Now().Add(math.MaxInt64), d, "now + d, as time.Time.Add gives it")
	assert.NoError(t, far.Err())

	stdFar, cancelStdFar := context.WithTimeout(context.Background(), math.MaxInt64)
	defer cancelStdFar()
	real, cancelReal := contextTimer(t).WithTimeout(context.Background(), math.MaxInt64)
	defer cancelReal()
	stdD, _ := stdFar.Deadline()
	d, _ = real.Deadline()
	assert.False(t, d.Before(stdD), "on the runtime's clock, no earlier than the package's made before it")
}

// TestContextParentCancelReleasesTheTimeoutOfAContextWithDerivedOnes: a
// context with derived contexts learns of its parent's cancellation
// through its watch, which releases its timeout.
func TestContextParentCancelReleasesTheTimeoutOfAContextWithDerivedOnes(t *testing.T) {
	h := contextTimer(t)
	parent, cancelParent := cancellableParent(t)
	c, cancel := h.WithTimeout(parent, time.Hour)
	defer cancel()
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	require.Equal(t, int64(1), h.PendingTimeouts())
	cancelParent(nil)
	within(t, child, 5*time.Second, "child")
	assert.Eventually(t, func() bool { return h.PendingTimeouts() == 0 }, 5*time.Second, time.Millisecond)
}

// TestContextAfterFuncRegistrations: the context keeps its own list of the
// functions of derived contexts: a stop removes one, a slot is reused, a
// stale stop removes nothing, and the functions run once.
func TestContextAfterFuncRegistrations(t *testing.T) {
	h := contextTimer(t)
	c, cancel := h.WithTimeout(context.Background(), time.Hour)
	w := c.(*wheelContext)
	var calls atomic.Int32
	stop1 := w.AfterFunc(func() { calls.Add(1) })
	stop2 := w.AfterFunc(func() { calls.Add(10) })
	x := w.extras.Load()
	require.Equal(t, 2, x.registered())
	assert.True(t, stop1())
	assert.False(t, stop1(), "once")
	stop3 := w.AfterFunc(func() { calls.Add(100) }) // takes the freed slot
	assert.False(t, stop1(), "a stale stop does not remove the slot's new function")
	assert.Equal(t, 2, x.registered())
	cancel()
	assert.Equal(t, int32(110), calls.Load(), "called before the CancelFunc returned")
	assert.False(t, stop2())
	assert.False(t, stop3())
	cancel()
	assert.Equal(t, int32(110), calls.Load(), "once")

	late := make(chan struct{})
	assert.False(t, w.AfterFunc(func() { close(late) })(), "a function registered once done has started")
	<-late
}

// TestDefaultTimerServesRequestDeadlines: with New()'s defaults, a 100ms
// WithTimeout is done, at the median, within 10ms of its deadline, as a Go
// server comparing with context.WithTimeout expects, and never before it.
// Real time is the subject.
func TestDefaultTimerServesRequestDeadlines(t *testing.T) {
	h, err := New()
	require.NoError(t, err)
	defer h.Stop()
	const n = 21
	late := make(chan time.Duration, n)
	for range n {
		ctx, cancel := h.WithTimeout(context.Background(), 100*time.Millisecond)
		go func() {
			defer cancel()
			<-ctx.Done()
			deadline, _ := ctx.Deadline()
			late <- time.Since(deadline)
		}()
		time.Sleep(time.Millisecond) // deadlines spread over the ticks
	}
	var all []time.Duration
	for range n {
		all = append(all, <-late)
	}
	slices.Sort(all)
	assert.GreaterOrEqual(t, all[0], time.Duration(0), "never before the deadline")
	assert.LessOrEqual(t, all[n/2], 10*time.Millisecond, "median lateness; all: %v", all)
}
