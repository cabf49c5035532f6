package hashedwheel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
)

// A tick covers (start, end]: a deadline on a tick's end runs at that end,
// as a runtime timer, context.WithTimeout in a synctest bubble and the
// usual fake clocks fire at their deadline.

// TestDeadlineReachedExactlyRuns: with the default options on a
// clock.Fake, a 100ms context is done once the clock has moved 100ms, in
// two steps of 99ms and 1ms, and not before; Every(1s) runs 3600 times in
// an hour; AfterFunc(d) runs when Advance reaches d, and not 1ns earlier.
func TestDeadlineReachedExactlyRuns(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newTimerOn(t, fake, WithTickDuration(DefaultTickDuration))
	ctx, cancel := h.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	fake.Advance(99 * time.Millisecond)
	require.NoError(t, ctx.Err(), "done before its deadline")
	fake.Advance(time.Millisecond)
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "not done at its deadline")

	runs := 0
	every, err := h.Every(time.Second, func() { runs++ })
	require.NoError(t, err)
	fake.Advance(time.Hour)
	assert.Equal(t, 3600, runs, "Every(1s) over an hour")
	require.True(t, every.Cancel())

	for _, d := range []time.Duration{time.Millisecond, 1500 * time.Microsecond, time.Minute} {
		ran := false
		_, err := h.AfterFunc(d, func() { ran = true })
		require.NoError(t, err)
		fake.Advance(d - 1)
		require.False(t, ran, "AfterFunc(%v) ran 1ns before its deadline", d)
		if d%DefaultTickDuration == 0 {
			fake.Advance(1)
			require.True(t, ran, "AfterFunc(%v) did not run at its deadline, a tick's end", d)
		} else {
			fake.Advance(DefaultTickDuration - d%DefaultTickDuration + 1)
			require.True(t, ran, "AfterFunc(%v) did not run at the end of the tick covering it", d)
		}
	}
}

// TestNowIsTheClocks: the timer gives the time of the
// timer's clock, which follows a clock.Fake.
func TestNowIsTheClocks(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	h := newTimerOn(t, fake)
	assert.Equal(t, start, h.Now())
	fake.Advance(90 * time.Minute)
	assert.Equal(t, start.Add(90*time.Minute), h.Now())

	var zero HashedWheelTimer // the default clock: the runtime's
	before := time.Now()
	now := zero.Now()
	assert.False(t, now.Before(before) || now.After(time.Now()), "Now of a zero timer: %v", now)
	zero.Stop()
}
