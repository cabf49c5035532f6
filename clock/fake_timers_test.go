package clock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// received returns the value c holds, and whether it held one, without
// waiting: on a Fake, a value due was sent before Advance returned.
func received(c <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-c:
		return v, true
	default:
		return time.Time{}, false
	}
}

// TestFakeTimerFiresWhenAdvancedToItsDeadline: a Fake's Timer sends the
// fake time on C once Advance reaches its deadline, not before; After is
// its channel; a timer of zero or less fires at once.
func TestFakeTimerFiresWhenAdvancedToItsDeadline(t *testing.T) {
	fake := clock.NewFake(start)
	timer := fake.NewTimer(10 * time.Second)
	after := fake.After(10 * time.Second)
	fake.Advance(10*time.Second - time.Nanosecond)
	_, ok := received(timer.C)
	assert.False(t, ok, "not before its deadline")
	fake.Advance(time.Nanosecond)
	v, ok := received(timer.C)
	require.True(t, ok, "at its deadline")
	assert.Equal(t, start.Add(10*time.Second), v)
	v, ok = received(after)
	require.True(t, ok)
	assert.Equal(t, start.Add(10*time.Second), v)
	assert.False(t, timer.Stop(), "fired and received")

	now := fake.NewTimer(0)
	v, ok = received(now.Chan())
	require.True(t, ok, "a zero delay fires at once")
	assert.Equal(t, fake.Now(), v)
	assert.Zero(t, fake.Waiters())
}

// TestFakeWaitersFireInDeadlineOrderWithTheWheels: Advance stops at each
// instant a Timer, AfterFunc or a timer on the clock is due, in order, so
// that each runs at its own time, whoever made it.
func TestFakeWaitersFireInDeadlineOrderWithTheWheels(t *testing.T) {
	fake := clock.NewFake(start)
	h, err := hashedwheel.New(hashedwheel.WithClock(fake), hashedwheel.WithExecutor(pool.Inline))
	require.NoError(t, err)
	defer h.Stop()
	var (
		mu  sync.Mutex
		ran []string
	)
	record := func(name string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, name+"@"+fake.Since(start).String())
		}
	}
	fake.AfterFunc(30*time.Millisecond, record("clock"))
	_, err = h.AfterFunc(20*time.Millisecond, record("wheel"))
	require.NoError(t, err)
	fake.AfterFunc(10*time.Millisecond, record("clock"))
	ticker := fake.NewTicker(15 * time.Millisecond)
	defer ticker.Stop()

	fake.Advance(40 * time.Millisecond)
	assert.Equal(t, []string{"clock@10ms", "wheel@20ms", "clock@30ms"}, ran)
	v, ok := received(ticker.C)
	require.True(t, ok)
	assert.Equal(t, start.Add(15*time.Millisecond), v, "the first tick waits; the second was dropped")
	_, ok = received(ticker.C)
	assert.False(t, ok, "one tick held")
}

// TestFakeTimerStopAndResetKeepGo123Semantics: once Stop or Reset
// returns, no value from before is received; both report a timer whose
// value was not received as active, as time.Timer does since Go 1.23.
func TestFakeTimerStopAndResetKeepGo123Semantics(t *testing.T) {
	fake := clock.NewFake(start)
	timer := fake.NewTimer(time.Second)
	assert.True(t, timer.Stop(), "armed")
	assert.False(t, timer.Stop(), "stopped already")
	fake.Advance(2 * time.Second)
	_, ok := received(timer.C)
	assert.False(t, ok, "a stopped timer sends nothing")

	assert.False(t, timer.Reset(time.Second), "was stopped")
	fake.Advance(time.Second)
	assert.True(t, timer.Reset(time.Second), "fired but not received: active")
	_, ok = received(timer.C)
	assert.False(t, ok, "Reset discarded the stale value")
	fake.Advance(time.Second)
	v, ok := received(timer.C)
	require.True(t, ok)
	assert.Equal(t, start.Add(4*time.Second), v, "the value of the new deadline")

	fake.Advance(0)
	assert.False(t, timer.Reset(time.Hour), "fired and received: not active")
	fake.Advance(time.Hour)
	assert.True(t, timer.Stop(), "fired, not received")
	_, ok = received(timer.C)
	assert.False(t, ok, "Stop discarded it")
}

// TestFakeTickerTicksEachPeriodAndDropsForASlowReceiver: a Fake's Ticker
// sends at each multiple of its period; C holds one tick, the others due
// meanwhile dropped; Reset changes the period from now; after Stop nothing
// is received, the tick held included.
func TestFakeTickerTicksEachPeriodAndDropsForASlowReceiver(t *testing.T) {
	fake := clock.NewFake(start)
	ticker := fake.NewTicker(time.Second)
	for i := 1; i <= 3; i++ {
		fake.Advance(time.Second)
		v, ok := received(ticker.C)
		require.True(t, ok, "tick %d", i)
		assert.Equal(t, start.Add(time.Duration(i)*time.Second), v)
	}
	fake.Advance(3 * time.Second)
	v, ok := received(ticker.C)
	require.True(t, ok)
	assert.Equal(t, start.Add(4*time.Second), v, "the first tick missed is held, the later dropped")

	fake.Jump(10 * time.Second) // past ten periods at once: one tick
	_, ok = received(ticker.C)
	assert.True(t, ok)
	_, ok = received(ticker.C)
	assert.False(t, ok)

	ticker.Reset(5 * time.Second)
	fake.Advance(4 * time.Second)
	_, ok = received(ticker.C)
	assert.False(t, ok, "the new period counts from Reset")
	fake.Advance(time.Second)
	_, ok = received(ticker.Chan())
	assert.True(t, ok)

	fake.Advance(5 * time.Second)
	ticker.Stop()
	_, ok = received(ticker.C)
	assert.False(t, ok, "Stop discards the tick held")
	fake.Advance(time.Minute)
	_, ok = received(ticker.C)
	assert.False(t, ok, "stopped")
	assert.Zero(t, fake.Waiters())

	assert.Panics(t, func() { fake.NewTicker(0) }, "as time.NewTicker")
	assert.Panics(t, func() { ticker.Reset(-time.Second) }, "as time.Ticker.Reset")
}

// TestFakeSleepEndsWhenTheClockGetsThere: a goroutine sleeping on a Fake
// is a waiter, and wakes when Advance reaches the end of its sleep, not
// before; a sleep of zero or less returns at once.
func TestFakeSleepEndsWhenTheClockGetsThere(t *testing.T) {
	fake := clock.NewFake(start)
	fake.Sleep(0)
	fake.Sleep(-time.Second)
	woke := make(chan time.Time)
	go func() {
		fake.Sleep(time.Minute)
		woke <- fake.Now()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fake.BlockUntilContext(ctx, 1))
	fake.Advance(time.Minute - time.Second)
	select {
	case <-woke:
		t.Fatal("woke before the end of its sleep")
	default:
	}
	fake.Advance(time.Second)
	assert.Equal(t, start.Add(time.Minute), <-woke)
	assert.Equal(t, time.Minute, fake.Since(start))
	assert.Equal(t, -time.Minute, fake.Until(start))
}

// TestFakeWaitersCountsEveryKind: Waiters, which BlockUntilContext waits
// for, counts the timers' pending timeouts and the clock's own Timers,
// Tickers, Sleeps and AfterFunc functions, until they fire or stop.
func TestFakeWaitersCountsEveryKind(t *testing.T) {
	fake := clock.NewFake(start)
	h, err := hashedwheel.New(hashedwheel.WithClock(fake))
	require.NoError(t, err)
	defer h.Stop()
	_, err = h.AfterFunc(time.Hour, func() {})
	require.NoError(t, err)
	timer := fake.NewTimer(time.Hour)
	ticker := fake.NewTicker(time.Minute)
	stop := fake.AfterFunc(time.Hour, func() {})
	assert.Equal(t, 4, fake.Waiters())

	woke := make(chan struct{})
	go func() {
		fake.Sleep(time.Hour)
		close(woke)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fake.BlockUntilContext(ctx, 5), "the sleep")

	timer.Stop()
	ticker.Stop()
	assert.True(t, stop())
	assert.Equal(t, 2, fake.Waiters(), "the wheel's timeout and the sleep")
	fake.Advance(time.Hour)
	<-woke
	assert.Zero(t, fake.Waiters())
}
