// Copyright 2009 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.
//
// Adapted for wheeltimer from the tests of the Go standard library's time
// package, src/time/sleep_test.go and src/time/tick_test.go; the Go
// license text is in NOTICE.

package hashedwheel

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The time package's tests of its channel timers, on the wheel's: After,
// NewTimer and NewTicker are the timer's methods of those names, with
// Go 1.23's synchronous channels (asynctimerchan=0), the only semantics
// the wheel has. Each is TestStdlibChan and the test's name, beside the
// TestStdlib tests of time_stdlib_test.go, which hold AfterFunc, Every,
// Cancel and Reset to the same tests. Where the subject is real time, the
// wheel ticks every millisecond, its finest tick, and a delay below it is
// a tick; where it is logic, a fake clock moves. The deliberate
// differences are the TestStdlibDifference tests at the end.
//
// Left out: the asynctimerchan=1 and =2 variants, the impl=func subtests
// (AfterFunc's are in time_stdlib_test.go), TestManualTicker and
// TestTickerStopWithDirectInitialization (a Ticker made without
// NewTicker: its Stop does nothing and its Reset returns an error, see
// TestStdlibDifferenceChannelTimersReportErrors), and the Sleep tests.

// chanTimer is the time package's timer interface of TestChan, which
// ChanTimer and Ticker meet through the adapters below.
type chanTimer interface {
	Stop() bool
	Reset(time.Duration) bool
}

// resetTimer adapts a ChanTimer: its Reset returns an error too, which
// must be nil on a running timer.
type resetTimer struct {
	*ChanTimer
	tb testing.TB
}

func (t resetTimer) Reset(d time.Duration) bool {
	active, err := t.ChanTimer.Reset(d)
	assert.NoError(t.tb, err)
	return active
}

// tickerTimer is a Ticker with Reset and Stop methods that return bools,
// to have the same signatures as ChanTimer; a period below the tick is
// the tick.
type tickerTimer struct {
	*Ticker
	tb      testing.TB
	stopped bool
}

func (t *tickerTimer) Stop() bool {
	pending := !t.stopped
	t.stopped = true
	t.Ticker.Stop()
	return pending
}

func (t *tickerTimer) Reset(d time.Duration) bool {
	pending := !t.stopped
	t.stopped = false
	assert.NoError(t.tb, t.Ticker.Reset(max(d, time.Millisecond)))
	return pending
}

// TestChan: the channel semantics of a timer and a ticker through Stop
// and Reset, not in and in the heap (here: pending on the wheel or not),
// with goroutines blocked on C, and that Stop and Reset block old values
// from being received.
func TestStdlibChan(t *testing.T) {
	h := msTimer(t)
	t.Run("Timer", func(t *testing.T) {
		tim, err := h.NewTimer(10000 * time.Second)
		require.NoError(t, err)
		testTimerChan(t, resetTimer{tim, t}, tim.C)
	})
	t.Run("Ticker", func(t *testing.T) {
		tk, err := h.NewTicker(10000 * time.Second)
		require.NoError(t, err)
		testTimerChan(t, &tickerTimer{Ticker: tk, tb: t}, tk.C)
	})
}

func testTimerChan(t *testing.T, tim chanTimer, C <-chan time.Time) {
	_, isTicker := tim.(*tickerTimer)

	// Retry parameters. The time package's wait up to a second for a
	// tick; these wait up to five, for a loaded machine.
	const (
		sched = 10 * time.Millisecond
		tries = 500
	)

	noTick := func() {
		t.Helper()
		select {
		default:
		case <-C:
			t.Errorf("extra tick")
		}
	}
	assertTick := func() {
		t.Helper()
		select {
		default:
		case <-C:
			return
		}
		for range tries {
			time.Sleep(sched)
			select {
			default:
			case <-C:
				return
			}
		}
		t.Errorf("missing tick")
	}

	// Test simple stop; timer never in heap.
	tim.Stop()
	noTick()

	// Test modify of timer not in heap.
	tim.Reset(10000 * time.Second)
	noTick()

	// Test modify of timer in heap.
	tim.Reset(1)
	time.Sleep(sched)
	assertTick()

	// Sleep long enough that a second tick must happen if this is a ticker.
	// Test that Reset does not lose the tick that should have happened.
	time.Sleep(sched)
	tim.Reset(10000 * time.Second)
	noTick()

	notDone := func(done chan bool) {
		t.Helper()
		select {
		default:
		case <-done:
			t.Fatalf("early done")
		}
	}

	waitDone := func(done chan bool) {
		t.Helper()
		for range tries {
			time.Sleep(sched)
			select {
			case <-done:
				return
			default:
			}
		}
		t.Fatalf("never got done")
	}

	// Reset timer in heap (already reset above, but just in case).
	tim.Reset(10000 * time.Second)

	// Test stop while timer in heap (because goroutine is blocked on <-C).
	done := make(chan bool)
	notDone(done)
	go func() {
		<-C
		close(done)
	}()
	time.Sleep(sched)
	notDone(done)

	// Test reset far away while timer in heap.
	tim.Reset(20000 * time.Second)
	time.Sleep(sched)
	notDone(done)

	// Test imminent reset while in heap.
	tim.Reset(1)
	waitDone(done)

	// If this is a ticker, another tick should have come in already
	// (they are a tick apart). If a timer, it should have stopped.
	if isTicker {
		assertTick()
	} else {
		noTick()
	}

	tim.Stop()
	noTick()

	// Again using select and with two goroutines waiting.
	tim.Reset(10000 * time.Second)
	done = make(chan bool, 2)
	done1 := make(chan bool)
	done2 := make(chan bool)
	stop := make(chan bool)
	go func() {
		select {
		case <-C:
			done <- true
		case <-stop:
		}
		close(done1)
	}()
	go func() {
		select {
		case <-C:
			done <- true
		case <-stop:
		}
		close(done2)
	}()
	time.Sleep(sched)
	notDone(done)
	tim.Reset(sched / 2)
	time.Sleep(sched)
	waitDone(done)
	tim.Stop()
	close(stop)
	waitDone(done1)
	waitDone(done2)
	if isTicker {
		// extra send might have sent done again
		// (handled by buffering done above).
		select {
		default:
		case <-done:
		}
		// extra send after that might have filled C.
		select {
		default:
		case <-C:
		}
	}
	notDone(done)

	// Test enqueueTimerChan when timer is stopped.
	stop = make(chan bool)
	done = make(chan bool, 2)
	unexpected := make(chan time.Time, 2)
	for range 2 {
		go func() {
			select {
			case v := <-C:
				unexpected <- v // the time package panics here
			case <-stop:
			}
			done <- true
		}()
	}
	time.Sleep(sched)
	close(stop)
	waitDone(done)
	waitDone(done)
	assert.Empty(t, unexpected, "unexpected data")

	// Test that Stop and Reset block old values from being received.
	// (Proposal go.dev/issue/37196.)
	tim.Reset(1)
	time.Sleep(10 * time.Millisecond)
	if pending := tim.Stop(); pending != true {
		t.Errorf("tim.Stop() = %v, want true", pending)
	}
	noTick()

	tim.Reset(time.Hour)
	noTick()
	if pending := tim.Reset(1); pending != true {
		t.Errorf("tim.Stop() = %v, want true", pending)
	}
	assertTick()
	time.Sleep(10 * time.Millisecond)
	if isTicker {
		assertTick()
		time.Sleep(10 * time.Millisecond)
	} else {
		noTick()
	}
	if pending, want := tim.Reset(time.Hour), isTicker; pending != want {
		t.Errorf("tim.Stop() = %v, want %v", pending, want)
	}
	noTick()
	tim.Stop()
}

// TestAfterTimes: After(10ms) read 500ms later carries a time near the
// deadline, not the receive. The time package's bound.
func TestStdlibChanAfterTimes(t *testing.T) {
	t.Parallel()
	h := msTimer(t)
	// To avoid flakes due to very long scheduling delays,
	// require 10 failures in a row before deciding something is wrong.
	for range 10 {
		start := time.Now()
		c := h.After(10 * time.Millisecond)
		time.Sleep(500 * time.Millisecond)
		dt := (<-c).Sub(start)
		if dt < 400*time.Millisecond {
			require.GreaterOrEqual(t, dt, 10*time.Millisecond, "never before the deadline")
			return
		}
		t.Logf("After(10ms) time is +%v, want <400ms", dt)
	}
	t.Errorf("not working")
}

// TestTickTimes: the same for a Ticker's first tick.
func TestStdlibChanTickTimes(t *testing.T) {
	t.Parallel()
	h := msTimer(t)
	for range 10 {
		start := time.Now()
		tk, err := h.NewTicker(10 * time.Millisecond)
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond)
		dt := (<-tk.C).Sub(start)
		tk.Stop()
		if dt < 400*time.Millisecond {
			require.GreaterOrEqual(t, dt, 10*time.Millisecond, "never before the first tick is due")
			return
		}
		t.Logf("Tick(10ms) time is +%v, want <400ms", dt)
	}
	t.Errorf("not working")
}

// TestAfter: After(100ms) sends no sooner than 100ms, a time no earlier.
// The wheel never fires early, so there is no adjustDelay.
func TestStdlibChanAfter(t *testing.T) {
	h := msTimer(t)
	const delay = 100 * time.Millisecond
	start := time.Now()
	end := recvWithin(t, h.After(delay), 10*time.Second, "After(100ms)")
	if duration := time.Since(start); duration < delay {
		t.Fatalf("After(%s) slept for only %d ns", delay, duration)
	}
	if min := start.Add(delay); end.Before(min) {
		t.Fatalf("After(%s) expect >= %s, got %s", delay, min, end)
	}
}

// TestAfterTick: ten After(Delta) in a row take ten Deltas, never less,
// and, unless -short, not more than three times that.
func TestStdlibChanAfterTick(t *testing.T) {
	t.Parallel()
	const Count = 10
	Delta := 100 * time.Millisecond
	if testing.Short() {
		Delta = 10 * time.Millisecond
	}
	h := msTimer(t)
	t0 := time.Now()
	for range Count {
		recvWithin(t, h.After(Delta), 10*time.Second, "After(Delta)")
	}
	t1 := time.Now()
	d := t1.Sub(t0)
	target := Delta * Count
	if d < target { // the time package allows 9/10 of it; the wheel never fires early
		t.Fatalf("%d ticks of %s too fast: took %s, expected %s", Count, Delta, d, target)
	}
	if !testing.Short() && d > target*30/10 {
		t.Fatalf("%d ticks of %s too slow: took %s, expected %s", Count, Delta, d, target)
	}
}

// TestAfterStop: a stopped timer sends nothing, not even once a later
// After has sent, and a second Stop returns false. On a fake clock, with
// none of the time package's retries for flakiness.
func TestStdlibChanAfterStop(t *testing.T) {
	h, fake := newFakeTimer(t)
	_, err := h.NewTimer(100 * time.Millisecond)
	require.NoError(t, err)
	t0, err := h.NewTimer(50 * time.Millisecond)
	require.NoError(t, err)
	t1, err := h.NewTimer(150 * time.Millisecond)
	require.NoError(t, err)
	c2 := h.After(200 * time.Millisecond)
	require.True(t, t0.Stop(), "failed to stop event 0")
	require.True(t, t1.Stop(), "failed to stop event 1")
	fake.Advance(200*time.Millisecond + testTick)
	require.Len(t, c2, 1, "After(200ms) sent")
	<-c2
	select {
	case <-t0.C:
		t.Error("event 0 was not stopped")
	case <-t1.C:
		t.Error("event 1 was not stopped")
	default:
	}
	assert.False(t, t1.Stop(), "Stop returned true twice")
}

// TestAfterQueuing: After channels made together send in the order of
// their delays, each never before its delay nor more than ten deltas
// after it.
func TestStdlibChanAfterQueuing(t *testing.T) {
	h := msTimer(t)
	// This test flakes out on loaded machines,
	// so we'll try it a few times before declaring it a failure.
	const attempts = 5
	err := errors.New("!=nil")
	for i := 0; i < attempts && err != nil; i++ {
		delta := time.Duration(20+i*50) * time.Millisecond
		if err = testChanAfterQueuing1(h, delta); err != nil {
			t.Logf("attempt %v failed: %v", i, err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func awaitAfter(slot int, result chan<- afterResult, ac <-chan time.Time) {
	result <- afterResult{slot, <-ac}
}

func testChanAfterQueuing1(h *HashedWheelTimer, delta time.Duration) error {
	// make the result channel buffered because we don't want
	// to depend on channel queuing semantics that might
	// possibly change in the future.
	result := make(chan afterResult, len(slots))

	t0 := time.Now()
	for _, slot := range slots {
		go awaitAfter(slot, result, h.After(time.Duration(slot)*delta))
	}
	var order []int
	var times []time.Time
	for range slots {
		r := <-result
		order = append(order, r.slot)
		times = append(times, r.t)
	}
	for i := range order {
		if i > 0 && order[i] < order[i-1] {
			return fmt.Errorf("After calls returned out of order: %v", order)
		}
	}
	for i, t := range times {
		dt := t.Sub(t0)
		target := time.Duration(order[i]) * delta
		if dt < target || dt > target+delta*10 { // never early: no delta/2 below
			return fmt.Errorf("After(%s) arrived at %s, expected [%s,%s]", target, dt, target, target+delta*10)
		}
	}
	return nil
}

// TestReset: Reset of a timer not yet fired returns true and moves it; it
// then fires at the new time, not the old; Reset of a fired timer returns
// false.
func TestStdlibChanReset(t *testing.T) {
	h := msTimer(t)
	// We try to run this test with increasingly larger multiples
	// until one works so slow, loaded hardware isn't as flaky,
	// but without slowing down fast machines unnecessarily.
	d := 1 * time.Millisecond
	const maxDuration = 10 * time.Second
	for {
		err := testChanReset(h, d)
		if err == nil {
			break
		}
		d *= 2
		if d > maxDuration {
			t.Error(err)
			break
		}
		t.Logf("%v; trying duration %v", err, d)
	}
}

func testChanReset(h *HashedWheelTimer, d time.Duration) error {
	t0, err := h.NewTimer(2 * d)
	if err != nil {
		return err
	}
	defer t0.Stop()
	time.Sleep(d)
	if active, err := t0.Reset(3 * d); err != nil || !active {
		return fmt.Errorf("resetting unfired timer returned %v, %v", active, err)
	}
	time.Sleep(2 * d)
	select {
	case <-t0.C:
		return errors.New("timer fired early")
	default:
	}
	time.Sleep(2 * d)
	select {
	case <-t0.C:
	default:
		return errors.New("reset timer did not fire")
	}

	if active, err := t0.Reset(50 * time.Millisecond); err != nil || active {
		return fmt.Errorf("resetting expired timer returned %v, %v", active, err)
	}
	return nil
}

func TestStdlibChanStopResult(t *testing.T) {
	testChanStopResetResult(t, true)
}

func TestStdlibChanResetResult(t *testing.T) {
	testChanStopResetResult(t, false)
}

// testChanStopResetResult: when racing between running a timer and
// stopping (or resetting an hour away) a timer, Stop (or Reset)
// consistently indicates whether a value can be read from the channel:
// false, it comes; true, it never does. The time package's 1000 goroutines
// making 100 pairs each are 100 making 50 here (20 making 20 under
// -short), on the wheel's 1ms tick.
func testChanStopResetResult(t *testing.T, testStop bool) {
	h := msTimer(t)
	stopOrReset := func(timer *ChanTimer) bool {
		if testStop {
			return timer.Stop()
		}
		active, err := timer.Reset(1 * time.Hour)
		assert.NoError(t, err)
		return active
	}

	goroutines, pairs := 100, 50
	if testing.Short() {
		goroutines, pairs = 20, 20
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var kept []*ChanTimer // the timers whose Stop or Reset returned true
	wg.Add(goroutines)
	for range goroutines {
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < pairs; j++ {
				timer1, err := h.NewTimer(1 * time.Millisecond)
				assert.NoError(t, err)
				timer2, err := h.NewTimer(1 * time.Millisecond)
				assert.NoError(t, err)
				if err != nil {
					return
				}
				other := timer2
				select {
				case <-timer1.C:
				case <-timer2.C:
					other = timer1
				case <-time.After(30 * time.Second):
					t.Error("neither timer fired within 30s")
					return
				}
				if stopOrReset(other) {
					mu.Lock()
					kept = append(kept, other)
					mu.Unlock()
					continue
				}
				// The test fails if this channel read times out.
				select {
				case <-other.C:
				case <-time.After(30 * time.Second):
					t.Error("Stop or Reset returned false, and no value came within 30s")
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	left := h.Stop() // waits for every run it started
	assert.Empty(t, left, "channel timers live at Stop move to the clock's timers")
	for _, tim := range kept {
		assert.Empty(t, tim.C, "Stop or Reset returned true, and a value came")
	}
	if !testStop {
		assert.Equal(t, uint64(len(kept)), h.Stats().ChanFallbacks, "each timer Reset an hour away was still pending at Stop")
	}
	for _, tim := range kept {
		tim.Stop()
	}
	t.Logf("%d of %d races won by Stop or Reset", len(kept), goroutines*pairs)
}

// multiWakeupRounds is the rounds of TestStdlibChanMultiWakeupTicker,
// where the time package's goroutines make 100 000: each round here may
// wait a millisecond, a tick.
const multiWakeupRounds = 1000

// TestMultiWakeupTicker: goroutines wake on one ticker's channel or on an
// After each, at once, without a crash; the ticker, stopped, then sends
// nothing.
func TestStdlibChanMultiWakeupTicker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	h := msTimer(t)
	timer, err := h.NewTicker(time.Millisecond) // the time package's is a microsecond: below the tick
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(multiWakeupGoroutines)
	for range multiWakeupGoroutines {
		go func() {
			defer wg.Done()
			for range multiWakeupRounds {
				select {
				case <-timer.C:
				case <-h.After(time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	timer.Stop()
	h.Stop() // every run has returned
	assert.Empty(t, timer.C, "no tick after Stop")
}

// TestMultiWakeupTimer: goroutines receive from one timer and Reset it
// together, without a crash; stopped, it then sends nothing.
func TestStdlibChanMultiWakeupTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	h := msTimer(t)
	timer, err := h.NewTimer(time.Nanosecond)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(multiWakeupGoroutines)
	for range multiWakeupGoroutines {
		go func() {
			defer wg.Done()
			for range 10000 {
				select {
				case <-timer.C:
				default:
				}
				_, err := timer.Reset(time.Nanosecond)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	timer.Stop()
	h.Stop() // every run has returned
	assert.Empty(t, timer.C, "no value after Stop")
}

// TestTicker: count/2 ticks of delta, a Reset to 2·delta, and count/2
// more take 3·delta·count/2, never less (the wheel's ticks are never
// early) and not more than 30% over; a stopped ticker sends nothing.
func TestStdlibChanTicker(t *testing.T) {
	t.Parallel()
	h := msTimer(t)

	// We want to test that a ticker takes as much time as expected.
	// Since we don't want the test to run for too long, we don't
	// want to use lengthy times. This makes the test inherently flaky.
	// Start with a short time, but try again with a long one if the
	// first test fails.
	baseCount := 10
	baseDelta := 20 * time.Millisecond

	var errs []string
	logErrs := func() {
		for _, e := range errs {
			t.Log(e)
		}
	}

	for _, test := range []struct {
		count int
		delta time.Duration
	}{{
		count: baseCount,
		delta: baseDelta,
	}, {
		count: 8,
		delta: 1 * time.Second,
	}} {
		count, delta := test.count, test.delta
		t0 := time.Now() // before the ticker's start, from which its ticks are never early
		ticker, err := h.NewTicker(delta)
		require.NoError(t, err)
		for range count / 2 {
			recvWithin(t, ticker.C, time.Minute, "a tick")
		}
		require.NoError(t, ticker.Reset(delta*2))
		for range count - count/2 {
			recvWithin(t, ticker.C, time.Minute, "a tick")
		}
		ticker.Stop()
		t1 := time.Now()
		dt := t1.Sub(t0)
		target := 3 * delta * time.Duration(count/2)
		slop := target * 3 / 10
		require.GreaterOrEqual(t, dt, target, "the ticks came early") // the wheel's ticks are never early
		if dt > target+slop {
			errs = append(errs, fmt.Sprintf("%d %s ticks then %d %s ticks took %s, expected [%s,%s]", count/2, delta, count/2, delta*2, dt, target, target+slop))
			// System may be overloaded; sleep a bit
			// in the hopes it will recover.
			time.Sleep(time.Second / 2)
			continue
		}
		// Now test that the ticker stopped.
		time.Sleep(2 * delta)
		select {
		case <-ticker.C:
			errs = append(errs, "Ticker did not shut down")
			continue
		default:
			// ok
		}

		// Test passed, so all done.
		if len(errs) > 0 {
			t.Logf("saw %d errors, ignoring to avoid flakiness", len(errs))
			logErrs()
		}

		return
	}

	t.Errorf("saw %d errors", len(errs))
	logErrs()
}

// TestTeardown: three tickers in a row each deliver a tick and are
// stopped, without deadlock.
func TestStdlibChanTeardown(t *testing.T) {
	t.Parallel()

	Delta := 100 * time.Millisecond
	if testing.Short() {
		Delta = 20 * time.Millisecond
	}
	h := msTimer(t)
	for range 3 {
		ticker, err := h.NewTicker(Delta)
		require.NoError(t, err)
		recvWithin(t, ticker.C, time.Minute, "the first tick")
		ticker.Stop()
		assert.Empty(t, ticker.C, "no tick after Stop")
	}
}

// TestTimerGC's NewTimerStop and NewTickerStop: a stopped timer or ticker
// is collected once nothing refers to it. Its After, Tick, NewTimer and
// NewTicker subtests are TestStdlibDifferenceUnstoppedChannelTimersAreHeld.
func TestStdlibChanTimerGC(t *testing.T) {
	run := func(t *testing.T, what string, f func(t *testing.T, h *HashedWheelTimer)) {
		t.Helper()
		t.Run(what, func(t *testing.T) {
			t.Helper()
			h, fake := newFakeTimer(t)
			const N = 1e4
			var stats runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&stats)
			before := int64(stats.Mallocs - stats.Frees)

			for j := 0; j < N; j++ {
				f(t, h)
			}
			fake.Advance(testTick) // the worker drops what was cancelled

			runtime.GC()
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&stats)
			after := int64(stats.Mallocs - stats.Frees)

			// Allow some slack, but inuse >= N means at least 1 allocation per iteration.
			inuse := after - before
			if inuse >= N {
				t.Errorf("%s did not get GC'ed: %d allocations", what, inuse)
			}
		})
	}

	run(t, "NewTimerStop", func(t *testing.T, h *HashedWheelTimer) {
		tim, err := h.NewTimer(time.Hour)
		require.NoError(t, err)
		require.True(t, tim.Stop())
	})
	run(t, "NewTickerStop", func(t *testing.T, h *HashedWheelTimer) {
		tk, err := h.NewTicker(time.Hour)
		require.NoError(t, err)
		tk.Stop()
	})
}

// The wheel's deliberate differences from the time package's channel
// timers.

// TestStdlibDifferenceUnstoppedChannelTimersAreHeld: an After, a
// ChanTimer or a Ticker that nothing refers to any more stays on the wheel,
// and in memory, until it fires (a Ticker: until Stop), where Go 1.23
// collects an unreferenced channel timer at once; the timer's Stop moves
// them to the clock's own timers, which hold them as long.
func TestStdlibDifferenceUnstoppedChannelTimersAreHeld(t *testing.T) {
	for _, tc := range []struct {
		what string
		f    func(h *HashedWheelTimer) error
	}{
		{"After", func(h *HashedWheelTimer) error { h.After(time.Hour); return nil }},
		{"NewTimer", func(h *HashedWheelTimer) error { _, err := h.NewTimer(time.Hour); return err }},
		{"NewTicker", func(h *HashedWheelTimer) error { _, err := h.NewTicker(time.Hour); return err }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			h, fake := newFakeTimer(t)
			const N = 1e4
			before := liveObjects()
			for range int(N) {
				require.NoError(t, tc.f(h))
			}
			fake.Advance(testTick)
			assert.Equal(t, int64(N), h.PendingTimeouts(), "each is a pending timeout")
			assert.GreaterOrEqual(t, liveObjects()-before, int64(N), "and is kept in memory")
			h.Stop()
			assert.GreaterOrEqual(t, liveObjects()-before, int64(N), "the clock's timers keep them after the timer's Stop")
			fake.Advance(time.Hour)
			if tc.what == "NewTicker" {
				assert.GreaterOrEqual(t, liveObjects()-before, int64(N), "a Ticker, until its Stop")
				return
			}
			assert.Less(t, liveObjects()-before, int64(N), "fired, they are let go")
		})
	}
}

// liveObjects returns the heap's live objects after three collections.
func liveObjects() int64 {
	var stats runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&stats)
	return int64(stats.Mallocs - stats.Frees)
}

// TestStdlibDifferenceChannelHoldsOneValue: C has a buffer of one, and a
// fired time waits in it, where a Go 1.23 time.Timer's channel reports a
// capacity and length of 0. Stop and Reset empty it.
func TestStdlibDifferenceChannelHoldsOneValue(t *testing.T) {
	h, fake := newFakeTimer(t)
	tim, err := h.NewTimer(testTick)
	require.NoError(t, err)
	std := time.NewTimer(time.Nanosecond)
	defer std.Stop()
	assert.Equal(t, 0, cap(std.C), "time.Timer's channel")
	assert.Equal(t, 1, cap(tim.C), "the ChanTimer's")
	fake.Advance(2 * testTick)
	assert.Equal(t, 1, len(tim.C), "the fired time waits in it")
	assert.True(t, tim.Stop(), "not received: Stop reports it stopped the timer")
	assert.Equal(t, 0, len(tim.C), "and Stop empties it")
}

// TestStdlibDifferenceChannelTimersReportErrors: NewTicker and
// Ticker.Reset return ErrInvalidPeriod for a period of zero or less,
// where the time package's panic, and for one below the tick; NewTimer
// and NewTicker return ErrStopped once the timer is stopped. Channel
// timers made before keep working: the timer's Stop moves them to the
// clock's own timers, and their Reset re-arms there; After on a stopped
// timer sends at its time too. Nothing panics: a ChanTimer or Ticker
// made as a literal stops and reports on Reset that no timer drives it.
func TestStdlibDifferenceChannelTimersReportErrors(t *testing.T) {
	h, fake := newFakeTimer(t)
	for _, period := range []time.Duration{math.MinInt64, -1, 0, 1, testTick - 1} {
		require.NotPanics(t, func() {
			tk, err := h.NewTicker(period)
			assert.Nil(t, tk)
			assert.ErrorIs(t, err, ErrInvalidPeriod, "NewTicker(%v)", period)
		})
	}
	tk, err := h.NewTicker(testTick)
	require.NoError(t, err)
	err = tk.Reset(0)
	require.ErrorIs(t, err, ErrInvalidPeriod)
	assert.Contains(t, err.Error(), "Reset(0s)")
	fake.Advance(2 * testTick)
	assert.Empty(t, tk.C, "a failed Reset leaves the ticker stopped")

	tim, err := h.NewTimer(testTick)
	require.NoError(t, err)
	require.NoError(t, tk.Reset(testTick))
	h.Stop()
	assert.True(t, tim.Stop(), "armed at the timer's Stop, it still was")
	active, err := tim.Reset(testTick)
	assert.False(t, active)
	assert.NoError(t, err, "Reset after the timer's Stop")
	fake.Advance(testTick)
	assert.Len(t, tim.C, 1, "the ChanTimer, reset after the timer's Stop, fired")
	assert.Len(t, tk.C, 1, "the Ticker, live at the timer's Stop, ticks on")
	<-tk.C
	assert.NoError(t, tk.Reset(2*testTick), "Ticker.Reset after the timer's Stop")
	fake.Advance(2 * testTick)
	assert.Len(t, tk.C, 1, "at its new period")
	tk.Stop()
	_, err = h.NewTimer(testTick)
	assert.ErrorIs(t, err, ErrStopped)
	_, err = h.NewTicker(testTick)
	assert.ErrorIs(t, err, ErrStopped)
	rejected := h.Stats().RejectedStopped
	after := h.After(testTick)
	assert.Empty(t, after, "After on a stopped timer: not at once")
	fake.Advance(testTick)
	assert.Len(t, after, 1, "but at its time")
	assert.Equal(t, rejected+1, h.Stats().RejectedStopped, "the refusal is counted")

	require.NotPanics(t, func() {
		var zt ChanTimer
		assert.False(t, zt.Stop())
		_, err := zt.Reset(time.Second)
		assert.ErrorIs(t, err, ErrStopped)
		var ztk Ticker
		ztk.Stop()
		assert.ErrorIs(t, ztk.Reset(time.Second), ErrStopped)
	})
}

// TestStdlibDifferenceChannelTimeIsTheTickEnd: the time is sent at the end
// of the tick that covers the deadline, and is the timer's clock's time
// then, where time.Timer sends at its deadline.
func TestStdlibDifferenceChannelTimeIsTheTickEnd(t *testing.T) {
	h, fake := newFakeTimer(t)
	start := fake.Now()
	tim, err := h.NewTimer(time.Millisecond)
	require.NoError(t, err)
	fake.Advance(testTick - time.Millisecond)
	assert.Empty(t, tim.C, "a 1ms timer waits for the end of its 10ms tick")
	fake.Advance(time.Millisecond)
	require.Len(t, tim.C, 1, "and sends then")
	assert.Equal(t, start.Add(testTick), <-tim.C, "the fake clock's time at the tick's end")
}
