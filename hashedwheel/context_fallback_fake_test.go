package hashedwheel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
)

// TestContextFallbackFollowsTheFakeClock: on a clock.Fake whose date is in
// the real past, a context the wheel cannot keep, on a stopped timer or
// one at its limit, still follows the fake: not done before its deadline,
// done with DeadlineExceeded (or its cause) once Advance reaches it,
// cancelled by its CancelFunc or its parent; counted in ContextFallbacks.
func TestContextFallbackFollowsTheFakeClock(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	full := newTimerOn(t, fake, WithMaxPendingTimeouts(1))
	_, err := full.AfterFunc(time.Hour*24, func() {})
	require.NoError(t, err)
	stopped := newTimerOn(t, fake)
	stopped.Stop()
	cause := errors.New("too slow")
	for name, h := range map[string]*HashedWheelTimer{"full": full, "stopped": stopped} {
		deadline := fake.Now().Add(time.Hour)
		byDeadline, cancel1 := h.WithDeadline(context.Background(), deadline)
		defer cancel1()
		byTimeout, cancel2 := h.WithTimeoutCause(context.Background(), time.Hour, cause)
		defer cancel2()
		cancelled, cancel3 := h.WithTimeout(context.Background(), time.Hour)
		parent, cancelParent := context.WithCancel(context.Background())
		child, cancel4 := h.WithTimeout(parent, time.Hour)
		defer cancel4()
		assert.Equal(t, uint64(4), h.Stats().ContextFallbacks, name)
		d, ok := byDeadline.Deadline()
		assert.True(t, ok && d.Equal(deadline), "%s: Deadline %v", name, d)

		fake.Advance(time.Hour - time.Nanosecond)
		for _, c := range []context.Context{byDeadline, byTimeout, cancelled, child} {
			require.NoError(t, c.Err(), "%s: done before its deadline on the fake clock", name)
		}
		cancel3()
		assert.Equal(t, context.Canceled, cancelled.Err(), name)
		cancelParent()
		assert.Equal(t, context.Canceled, child.Err(), name)
		fake.Advance(time.Nanosecond)
		assert.Equal(t, context.DeadlineExceeded, byDeadline.Err(), "%s: at its deadline", name)
		assert.Equal(t, context.DeadlineExceeded, byTimeout.Err(), name)
		assert.Equal(t, cause, context.Cause(byTimeout), name)
		assert.Equal(t, context.Canceled, cancelled.Err(), "%s: stays cancelled", name)
	}
}

// TestContextOutlivesStopOnTheFakeClock: a context live at Stop keeps its
// deadline on the fake clock: done when Advance reaches it, not before;
// one cancelled after Stop stays cancelled.
func TestContextOutlivesStopOnTheFakeClock(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newTimerOn(t, fake)
	live, cancel := h.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cancelled, cancel2 := h.WithTimeout(context.Background(), time.Hour)
	fake.Advance(30 * time.Minute)
	h.Stop()
	cancel2()
	fake.Advance(30*time.Minute - time.Nanosecond)
	require.NoError(t, live.Err(), "done before its deadline on the fake clock")
	fake.Advance(time.Nanosecond)
	assert.Equal(t, context.DeadlineExceeded, live.Err(), "at its deadline")
	assert.Equal(t, context.Canceled, cancelled.Err())
}
