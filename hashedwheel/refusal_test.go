package hashedwheel

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAfterOnARefusingTimerIsNotAnExpiry: After on a stopped timer, and on
// one at its pending limit, returns a channel that receives nothing at
// once, and the time once the delay has passed on the timer's clock: a
// select's timeout case does not win at once. A closed channel made a
// "wait a second" loop spin.
func TestAfterOnARefusingTimerIsNotAnExpiry(t *testing.T) {
	for _, stopped := range []bool{true, false} {
		t.Run(map[bool]string{true: "stopped", false: "full"}[stopped], func(t *testing.T) {
			h, fake := newFakeTimer(t, WithMaxPendingTimeouts(1))
			if stopped {
				h.Stop()
			} else {
				mustSchedule(t, h, noopTask, time.Hour)
			}
			c := h.After(time.Second)
			select {
			case v := <-c:
				require.Fail(t, "After reported the refusal as an expiry", "received %v", v)
			default:
			}
			fake.Advance(time.Second - time.Nanosecond)
			assert.Empty(t, c, "before the delay")
			fake.Advance(time.Nanosecond)
			require.Len(t, c, 1, "at the delay")
			assert.Equal(t, fake.Now(), <-c)
			assert.Equal(t, uint64(1), h.Stats().ChanFallbacks)
		})
	}
}

// TestReArmingAChannelTimerNeedsNoSecondPlace: with a limit of one pending
// timeout, a Ticker's Reset and a ChanTimer's Stop then Reset, a hundred
// times each, never fail and keep the timers on the wheel: the Stop or
// Cancel of the old arming frees its place when it returns.
func TestReArmingAChannelTimerNeedsNoSecondPlace(t *testing.T) {
	h, fake := newFakeTimer(t, WithMaxPendingTimeouts(1))
	tk, err := h.NewTicker(testTick)
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, tk.Reset(testTick))
	}
	fake.Advance(testTick)
	assert.Len(t, tk.C, 1, "the ticker ticks")
	tk.Stop()
	tim, err := h.NewTimer(time.Hour)
	require.NoError(t, err)
	for range 100 {
		tim.Stop()
		_, err := tim.Reset(testTick)
		require.NoError(t, err)
	}
	fake.Advance(testTick)
	assert.Len(t, tim.C, 1, "the timer fires")
	s := h.Stats()
	assert.Zero(t, s.RejectedFull, "no arming was refused a place")
	assert.Zero(t, s.ChanFallbacks, "every arming stayed on the wheel")
}

// TestACancelledTimeoutFreesItsPlaceWhenCancelReturns: producers at a
// limit of one place each schedule and cancel in a tight loop: none is
// ever refused, for each Cancel frees its place as it returns. A place
// held until the worker processed the cancellation refused most of them.
func TestACancelledTimeoutFreesItsPlaceWhenCancelReturns(t *testing.T) {
	const producers, rounds = 6, 2000
	h := startTimer(t, WithMaxPendingTimeouts(producers))
	var wg sync.WaitGroup
	wg.Add(producers)
	for range producers {
		go func() {
			defer wg.Done()
			for range rounds {
				to, err := h.AfterFunc(time.Hour, func() {})
				if !assert.NoError(t, err) {
					return
				}
				to.Cancel()
			}
		}()
	}
	wg.Wait()
	s := h.Stats()
	assert.Zero(t, s.RejectedFull)
	assert.Equal(t, uint64(producers*rounds), s.Cancelled)
	assert.Zero(t, s.Pending)
}

// TestChannelTimersLiveAtStopKeepWorking: the timer's Stop moves a
// ChanTimer and a Ticker it holds to the clock's own timers: the
// ChanTimer sends at its deadline, not before, the Ticker goes on ticking
// at its rate, and both stop on their Stop. Stop returns neither.
func TestChannelTimersLiveAtStopKeepWorking(t *testing.T) {
	h, fake := newFakeTimer(t)
	tim, err := h.NewTimer(5 * testTick)
	require.NoError(t, err)
	tk, err := h.NewTicker(2 * testTick)
	require.NoError(t, err)
	fake.Advance(testTick)
	assert.Empty(t, h.Stop(), "channel timers are not returned")
	fake.Advance(testTick)
	assert.Len(t, tk.C, 1, "the ticker's tick at 2 ticks")
	<-tk.C
	fake.Advance(2 * testTick)
	assert.Len(t, tk.C, 1, "the ticker's tick at 4 ticks")
	<-tk.C
	fake.Advance(testTick - time.Nanosecond)
	assert.Empty(t, tim.C, "before its deadline")
	fake.Advance(time.Nanosecond)
	assert.Len(t, tim.C, 1, "at its deadline, 5 ticks in")
	fake.Advance(testTick)
	assert.Len(t, tk.C, 1, "the ticker's tick at 6 ticks")
	<-tk.C
	tk.Stop()
	fake.Advance(10 * testTick)
	assert.Empty(t, tk.C, "stopped, it ticks no more")
	assert.Equal(t, uint64(2), h.Stats().ChanFallbacks)
}
