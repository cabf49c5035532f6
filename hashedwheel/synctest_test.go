package hashedwheel

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSynctestFakeTime: a timer made inside a testing/synctest bubble runs
// on the bubble's fake time, so that a 30-minute timeout is tested in
// milliseconds; after Stop, no goroutine of the timer or of its pool is
// left, as the bubble requires.
func TestSynctestFakeTime(t *testing.T) {
	realStart := time.Now()
	synctest.Test(t, func(t *testing.T) {
		h, err := New(WithTickDuration(time.Second))
		require.NoError(t, err)
		start := time.Now()
		ctx, cancel := h.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		fired := make(chan time.Time, 1)
		_, err = h.AfterFunc(45*time.Minute, func() { fired <- time.Now() })
		require.NoError(t, err)
		every := 0
		_, err = h.Every(10*time.Minute, func() { every++ })
		require.NoError(t, err)

		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		waited := time.Since(start)
		assert.GreaterOrEqual(t, waited, 30*time.Minute, "never before the deadline")
		assert.LessOrEqual(t, waited, 30*time.Minute+2*time.Second, "at the first tick end after it")

		at := <-fired
		assert.GreaterOrEqual(t, at.Sub(start), 45*time.Minute)
		synctest.Wait()
		assert.Equal(t, 4, every, "runs at 10, 20, 30 and 40 minutes")
		assert.Len(t, h.Stop(), 1, "the periodic timeout")
	})
	assert.Less(t, time.Since(realStart), 10*time.Second, "fake time, not real")
}

// TestSynctestSlowTasksDueTogether: in a bubble, slow tasks due together,
// more than the pool's first goroutines take, all run to their end on the
// bubble's time: nothing of the timer spins while time stands still there,
// which would keep the bubble's time from ever reaching their end.
func TestSynctestSlowTasksDueTogether(t *testing.T) {
	realStart := time.Now()
	synctest.Test(t, func(t *testing.T) {
		h, err := New(WithTickDuration(time.Second))
		require.NoError(t, err)
		n := 4*runtime.GOMAXPROCS(0) + 1
		start := time.Now()
		ended := make(chan time.Duration, n)
		for range n {
			_, err := h.AfterFunc(time.Minute, func() {
				time.Sleep(time.Hour)
				ended <- time.Since(start)
			})
			require.NoError(t, err)
		}
		for range n {
			took := <-ended
			assert.GreaterOrEqual(t, took, time.Hour+time.Minute, "each slept its hour after its deadline")
			assert.LessOrEqual(t, took, time.Hour+time.Minute+2*time.Second, "started within a tick of it")
		}
		assert.Empty(t, h.Stop())
	})
	assert.Less(t, time.Since(realStart), 10*time.Second, "fake time, not real")
}

// TestSynctestTimerMadeOutsideRefusesToStartInABubble: a timer made
// outside a bubble, as a package-level one is, and first used inside one,
// refuses with ErrSynctestBubble, naming the fix, and starts no goroutine
// there: the bubble ends cleanly, with no deadlock panic. The zero
// HashedWheelTimer is refused the same way. Outside, it then works.
func TestSynctestTimerMadeOutsideRefusesToStartInABubble(t *testing.T) {
	h, err := New(WithTickDuration(time.Second), WithLogger(discardLogger()))
	require.NoError(t, err)
	var zero HashedWheelTimer
	synctest.Test(t, func(t *testing.T) {
		for name, timer := range map[string]*HashedWheelTimer{"New": h, "zero": &zero} {
			_, err := timer.AfterFunc(time.Minute, func() {})
			require.ErrorIs(t, err, ErrSynctestBubble, name)
			assert.ErrorContains(t, err, "the timer was made outside the bubble, whatever its clock: make it with New inside the bubble and Stop it there", name)
			assert.ErrorIs(t, timer.Start(), ErrSynctestBubble, name)
		}
	})
	ran := make(chan struct{})
	_, err = h.AfterFunc(0, func() { close(ran) })
	require.NoError(t, err)
	<-ran
	h.Stop()
	zero.Stop()
}

// TestSynctestTimerStartedOutsideRefusesUseInABubble: a timer running
// outside a bubble refuses a timeout from inside it, whose clock reads in
// another time domain, instead of running it on the runtime's time; a
// context from it falls back to the context package's, which runs on the
// bubble's time.
func TestSynctestTimerStartedOutsideRefusesUseInABubble(t *testing.T) {
	h := startTimer(t, WithLogger(discardLogger()))
	realStart := time.Now()
	synctest.Test(t, func(t *testing.T) {
		_, err := h.AfterFunc(time.Minute, func() {})
		require.ErrorIs(t, err, ErrSynctestBubble)
		assert.ErrorContains(t, err, "make it with New inside the bubble and Stop it there")
		_, err = h.Every(time.Minute, func() {})
		require.ErrorIs(t, err, ErrSynctestBubble)

		start := time.Now()
		ctx, cancel := h.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		assert.Equal(t, time.Hour, time.Since(start), "on the bubble's time")
	})
	assert.Less(t, time.Since(realStart), 10*time.Second, "fake time, not real")
	s := h.Stats()
	assert.Equal(t, uint64(1), s.ContextFallbacks)
	assert.Zero(t, s.Scheduled, "nothing accepted")
}

// TestSynctestTimerOnAFakeClockStartedOutsideRefusesEveryCallInside: a
// timer on a clock.Fake, started outside a bubble, refuses inside it every
// call that would schedule on it, with ErrSynctestBubble, naming the fix
// and not a clock.Fake, which it already has; After and WithTimeout fall
// back to the bubble's own clock; nothing kills the test binary. A timer
// that accepted them sent on the bubble's channels from its worker.
func TestSynctestTimerOnAFakeClockStartedOutsideRefusesEveryCallInside(t *testing.T) {
	fake := clock.NewFake(time.Now())
	h := newTimerOn(t, fake)
	calls := map[string]func() error{
		"NewTimeout":   func() error { _, err := h.NewTimeout(noopTask, time.Second); return err },
		"NewTimeouts":  func() error { _, err := h.NewTimeouts(time.Second, noopTask, noopTask); return err },
		"AfterFunc":    func() error { _, err := h.AfterFunc(time.Second, func() {}); return err },
		"Every":        func() error { _, err := h.Every(time.Second, func() {}); return err },
		"ScheduleFunc": func() error { _, err := h.ScheduleFunc(hourly{}, func() {}); return err },
		"NewTimer":     func() error { _, err := h.NewTimer(time.Second); return err },
		"NewTicker":    func() error { _, err := h.NewTicker(time.Second); return err },
	}
	synctest.Test(t, func(t *testing.T) {
		for name, call := range calls {
			err := call()
			require.ErrorIs(t, err, ErrSynctestBubble, name)
			assert.ErrorContains(t, err, "made outside the bubble", name)
			assert.NotContains(t, err.Error(), "clock.Fake", name)
		}
		start := time.Now()
		<-h.After(time.Minute)
		assert.Equal(t, time.Minute, time.Since(start), "After, on the bubble's time")
		ctx, cancel := h.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
	})
	s := h.Stats()
	assert.Zero(t, s.Scheduled, "nothing accepted")
	assert.Equal(t, uint64(1), s.ChanFallbacks)
	assert.Equal(t, uint64(1), s.ContextFallbacks)
}

// TestSynctestFakeOfATimerStartedOutsideRefusesToMoveInside: Advance and
// Settle of a clock.Fake, called in a bubble while a timer started outside
// it runs on the clock, panic, saying why, instead of waiting for the
// timer's worker across the bubble's edge, which killed the test binary.
func TestSynctestFakeOfATimerStartedOutsideRefusesToMoveInside(t *testing.T) {
	fake := clock.NewFake(time.Now())
	newTimerOn(t, fake)
	synctest.Test(t, func(t *testing.T) {
		for name, move := range map[string]func(){"Advance": func() { fake.Advance(time.Hour) }, "Settle": fake.Settle} {
			assert.PanicsWithValue(t, "clock: Fake."+name+" called in a testing/synctest bubble a timer on this clock "+
				"was not started in, or outside the one it was: move the clock where its timers run", move, name)
		}
	})
	fake.Advance(time.Hour) // outside, where the timer runs
}
