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
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

// The time package's own tests of what the wheel mirrors, each named
// TestStdlib and the test's name: time.AfterFunc is AfterFunc, Timer.Stop
// is Timeout.Cancel, Timer.Reset is Timeout.Reset, NewTicker is Every,
// Ticker.Stop is Cancel of Every's timeout. Where a test reads a Timer's
// or Ticker's channel, the function the wheel runs sends on one. Where the
// subject is real time, the wheel ticks every millisecond, its finest
// tick, and the bounds are the time package's; where it is logic, a fake
// clock moves. The wheel's deliberate differences from the time package
// are the TestStdlibDifference tests, each a sentence of the README.
//
// Left out, with no counterpart in the wheel:
//   - TestSleep, TestSleepZeroDeadlock and the Sleep calls of
//     TestOverflowSleep: the wheel has no Sleep. (TestLongAdjustTimers'
//     sleeping goroutines are timeouts here.)
//   - TestAfterTimes, TestTickTimes, TestChan, TestManualTicker,
//     TestTickerStopWithDirectInitialization, the impl=chan subtests and
//     the GODEBUG=asynctimerchan variants: the time a channel carries, its
//     length and draining, and a Ticker made without NewTicker; the wheel
//     runs a function and a Timeout is made only by the timer.
//   - TestZeroTimerResetPanics, TestZeroTimerStopPanics: Timeout is an
//     interface that only the timer makes, so there is no zero Timeout.
//   - TestTimerGC's After, Tick, NewTimer and NewTicker subtests: an
//     unreferenced Timer's channel timer may be collected because nobody
//     can receive from it; a timeout the wheel will run is the wheel's
//     until it runs or is cancelled, as time.AfterFunc's timer is.
//   - The benchmarks: the package's own benchmarks measure schedule,
//     cancel and Reset beside the runtime's (bench_test.go,
//     bench_reset_test.go), and the benchmarks module the latencies.

// msTimer returns a started timer on the real clock with the finest tick,
// 1ms, and the timer's own pool; it is stopped when the test ends.
func msTimer(tb testing.TB) *HashedWheelTimer {
	tb.Helper()
	return startTimer(tb, WithTickDuration(time.Millisecond), WithLogger(discardLogger()))
}

// everyTicker returns Every's timeout of period on h and the channel its
// runs send the time on, a time.Ticker's: one slot, a send with the slot
// full dropped.
func everyTicker(tb testing.TB, h *HashedWheelTimer, period time.Duration) (Timeout, <-chan time.Time) {
	tb.Helper()
	c := make(chan time.Time, 1)
	to, err := h.Every(period, func() {
		select {
		case c <- time.Now():
		default:
		}
	})
	require.NoError(tb, err)
	return to, c
}

// recvWithin receives from c, failing the test if nothing comes within
// bound: a lost run fails instead of hanging the suite.
func recvWithin[T any](tb testing.TB, c <-chan T, bound time.Duration, what string) T {
	tb.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(bound):
		require.FailNow(tb, fmt.Sprintf("%s: nothing within %v", what, bound))
		var zero T
		return zero
	}
}

// gcWhile collects garbage in a loop, yielding between collections, until
// the returned function is called, which waits for the loop to end.
func gcWhile() (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			runtime.GC()
			time.Sleep(time.Nanosecond) // lets the timer's worker run, as in the time package's test
		}
	}()
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// TestAfterFunc: a chain of AfterFunc(0) calls, each made from the run of
// the one before, completes while every earlier run is still in progress
// (where the time package's runs sleep a second, these wait for the chain
// to end): a running function holds up no other.
func TestStdlibAfterFunc(t *testing.T) {
	h := msTimer(t)
	release := make(chan struct{})
	defer close(release) // before the timer's Stop, which waits for the runs
	i := 10
	c := make(chan bool)
	var f func()
	f = func() {
		i--
		if i >= 0 {
			_, err := h.AfterFunc(0, f)
			assert.NoError(t, err)
			<-release
		} else {
			c <- true
		}
	}
	_, err := h.AfterFunc(0, f)
	require.NoError(t, err)
	recvWithin(t, c, 10*time.Second, "the chain of AfterFunc(0)")
}

// TestTickerStress: a ticker of the finest period delivers 100 runs while
// the collector runs without pause.
func TestStdlibTickerStress(t *testing.T) {
	stopGC := gcWhile()
	defer stopGC()
	h := msTimer(t)
	ticker, c := everyTicker(t, h, time.Millisecond)
	for i := range 100 {
		recvWithin(t, c, 10*time.Second, fmt.Sprintf("run %d", i))
	}
	assert.True(t, ticker.Cancel())
}

// TestTickerConcurrentStress: ten goroutines each take 100 of the ticks
// of one ticker while the collector runs without pause.
func TestStdlibTickerConcurrentStress(t *testing.T) {
	stopGC := gcWhile()
	defer stopGC()
	h := msTimer(t)
	ticker, c := everyTicker(t, h, time.Millisecond)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				select {
				case <-c:
				case <-time.After(30 * time.Second):
					t.Errorf("tick %d: nothing within 30s", i)
					return
				}
			}
		}()
	}
	wg.Wait()
	assert.True(t, ticker.Cancel())
}

// TestAfterFuncStarvation: with GOMAXPROCS=1 and two goroutines that are
// always runnable, ping-ponging on a channel, the timer's worker still
// gets to run and fire a timeout.
func TestStdlibAfterFuncStarvation(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := msTimer(t)

	var (
		wg   sync.WaitGroup
		stop atomic.Bool
		c    = make(chan bool, 1)
	)
	// Ends a live-lock with a failure instead of hanging the suite.
	var starved atomic.Bool
	guard := time.AfterFunc(30*time.Second, func() {
		starved.Store(true)
		stop.Store(true)
	})
	defer guard.Stop()

	wg.Add(2)
	go func() {
		for !stop.Load() {
			c <- true
		}
		close(c)
		wg.Done()
	}()
	go func() {
		for range c {
		}
		wg.Done()
	}()

	_, err := h.AfterFunc(time.Microsecond, func() { stop.Store(true) })
	require.NoError(t, err)
	wg.Wait()
	assert.False(t, starved.Load(), "the timeout did not fire within 30s")
}

// TestAfter: AfterFunc's function never runs before the delay has passed.
func TestStdlibAfter(t *testing.T) {
	h := msTimer(t)
	const delay = 100 * time.Millisecond
	ran := make(chan time.Time, 1)
	start := time.Now()
	_, err := h.AfterFunc(delay, func() { ran <- time.Now() })
	require.NoError(t, err)
	end := recvWithin(t, ran, 10*time.Second, "AfterFunc(100ms)")
	if duration := time.Since(start); duration < delay {
		t.Fatalf("AfterFunc(%s) slept for only %d ns", delay, duration)
	}
	if min := start.Add(delay); end.Before(min) {
		t.Fatalf("AfterFunc(%s) expect >= %s, got %s", delay, min, end)
	}
}

// TestAfterTick: ten AfterFunc(Delta) in a row take ten Deltas, never
// less, and, unless -short, not more than three times that.
func TestStdlibAfterTick(t *testing.T) {
	t.Parallel()
	const Count = 10
	Delta := 100 * time.Millisecond
	if testing.Short() {
		Delta = 10 * time.Millisecond
	}
	h := msTimer(t)
	fired := make(chan struct{}, 1)
	t0 := time.Now()
	for range Count {
		_, err := h.AfterFunc(Delta, func() { fired <- struct{}{} })
		require.NoError(t, err)
		recvWithin(t, fired, 10*time.Second, "AfterFunc(Delta)")
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

// TestAfterStop: a cancelled timeout does not run, not even once a later
// one has run, and a second Cancel returns false. On a fake clock, with
// none of the time package's retries for flakiness.
func TestStdlibAfterStop(t *testing.T) {
	h, fake := newFakeTimer(t)
	var ran0, ran1, ran2 bool
	_, err := h.AfterFunc(100*time.Millisecond, func() {})
	require.NoError(t, err)
	t0, err := h.AfterFunc(50*time.Millisecond, func() { ran0 = true })
	require.NoError(t, err)
	t1, err := h.AfterFunc(150*time.Millisecond, func() { ran1 = true })
	require.NoError(t, err)
	_, err = h.AfterFunc(200*time.Millisecond, func() { ran2 = true })
	require.NoError(t, err)
	require.True(t, t0.Cancel(), "failed to stop event 0")
	require.True(t, t1.Cancel(), "failed to stop event 1")
	fake.Advance(200*time.Millisecond + testTick)
	require.True(t, ran2, "the 200ms timeout ran")
	assert.False(t, ran0, "event 0 was not stopped")
	assert.False(t, ran1, "event 1 was not stopped")
	assert.False(t, t1.Cancel(), "Cancel returned true twice")
}

// TestAfterQueuing: timeouts made together run in the order of their
// delays, each never before its delay nor more than ten deltas after it.
func TestStdlibAfterQueuing(t *testing.T) {
	h := msTimer(t)
	// This test flakes out on loaded machines,
	// so we'll try it a few times before declaring it a failure.
	const attempts = 5
	err := errors.New("!=nil")
	for i := 0; i < attempts && err != nil; i++ {
		delta := time.Duration(20+i*50) * time.Millisecond
		if err = testAfterQueuing1(t, h, delta); err != nil {
			t.Logf("attempt %v failed: %v", i, err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

var slots = []int{5, 3, 6, 6, 6, 1, 1, 2, 7, 9, 4, 8, 0}

type afterResult struct {
	slot int
	t    time.Time
}

func testAfterQueuing1(t *testing.T, h *HashedWheelTimer, delta time.Duration) error {
	// make the result channel buffered because we don't want
	// to depend on channel queuing semantics that might
	// possibly change in the future.
	result := make(chan afterResult, len(slots))

	t0 := time.Now()
	for _, slot := range slots {
		_, err := h.AfterFunc(time.Duration(slot)*delta, func() { result <- afterResult{slot, time.Now()} })
		require.NoError(t, err)
	}
	var order []int
	var times []time.Time
	for range slots {
		r := recvWithin(t, result, time.Minute, "a queued AfterFunc")
		order = append(order, r.slot)
		times = append(times, r.t)
	}
	for i := range order {
		if i > 0 && order[i] < order[i-1] {
			return fmt.Errorf("AfterFunc calls ran out of order: %v", order)
		}
	}
	for i, at := range times {
		dt := at.Sub(t0)
		target := time.Duration(order[i]) * delta
		// The time package allows target-delta/2; the wheel never fires
		// early, which no retry excuses.
		require.GreaterOrEqual(t, dt, target, "AfterFunc(%s) ran early", target)
		if dt > target+delta*10 {
			return fmt.Errorf("AfterFunc(%s) arrived at %s, expected [%s,%s]", target, dt, target, target+delta*10)
		}
	}
	return nil
}

// TestTimerStopStress: 100 timeouts, two seconds away, made and then
// cancelled from as many goroutines at once, while the clock moves, never
// run. On a fake clock: the time package's version sleeps three seconds.
func TestStdlibTimerStopStress(t *testing.T) {
	h, fake := newFakeTimer(t)
	timeouts := make([]Timeout, 100)
	start, wait := concurrently(len(timeouts), func(i int) {
		to, err := h.AfterFunc(2*time.Second, func() {
			t.Errorf("timer %d was not stopped", i)
		})
		assert.NoError(t, err)
		timeouts[i] = to
	})
	start()
	wait()
	fake.Advance(time.Second)
	stopped := make([]bool, len(timeouts))
	start, wait = concurrently(len(timeouts), func(i int) { stopped[i] = timeouts[i].Cancel() })
	start()
	fake.Advance(500 * time.Millisecond) // the worker ticks while they cancel
	wait()
	fake.Advance(3 * time.Second)
	for i, ok := range stopped {
		assert.True(t, ok, "timer %d: Cancel returned false", i)
	}
	assert.Zero(t, h.PendingTimeouts())
}

// testReset is the time package's: a timeout pushed later by Reset does
// not run at its old deadline, runs by its new one, and a Reset once it
// has run returns false. The time package reads Timer.C; here the run
// records when it ran, so that running before the new deadline is a
// failure, never a reason to retry.
func testReset(t *testing.T, h *HashedWheelTimer, d time.Duration) error {
	ran := make(chan time.Time, 1)
	t0, err := h.AfterFunc(2*d, func() { ran <- time.Now() })
	require.NoError(t, err)
	time.Sleep(d)
	resetAt := time.Now()
	if !t0.Reset(3 * d) {
		return errors.New("resetting unfired timer returned false")
	}
	time.Sleep(2 * d)
	select {
	case at := <-ran:
		require.False(t, at.Before(resetAt.Add(3*d)), "timer fired early")
		return errors.New("the machine slept past the new deadline")
	default:
	}
	time.Sleep(2 * d)
	select {
	case at := <-ran:
		require.False(t, at.Before(resetAt.Add(3*d)), "timer fired early")
	default:
		t0.Cancel()
		return errors.New("reset timer did not fire")
	}

	if t0.Reset(50 * time.Millisecond) {
		return errors.New("resetting expired timer returned true")
	}
	return nil
}

func TestStdlibReset(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		h, fake := newFakeTimer(t)
		const d = 10 * testTick
		ran := 0
		t0, err := h.AfterFunc(2*d, func() { ran++ })
		require.NoError(t, err)
		fake.Advance(d)
		require.True(t, t0.Reset(3*d), "resetting unfired timer returned false")
		fake.Advance(2 * d)
		require.Zero(t, ran, "timer fired early")
		fake.Advance(2 * d)
		require.Equal(t, 1, ran, "reset timer did not fire")
		require.False(t, t0.Reset(50*time.Millisecond), "resetting expired timer returned true")
		fake.Advance(d)
		assert.Equal(t, 1, ran, "a Reset that returned false re-armed nothing")
	})
	t.Run("real", func(t *testing.T) {
		// We try to run this test with increasingly larger multiples
		// until one works so slow, loaded hardware isn't as flaky,
		// but without slowing down fast machines unnecessarily.
		h := msTimer(t)
		d := 1 * time.Millisecond
		const maxDuration = 10 * time.Second
		for {
			err := testReset(t, h, d)
			if err == nil {
				break
			}
			d *= 2
			if d > maxDuration {
				t.Fatal(err)
			}
			t.Logf("%v; trying duration %v", err, d)
		}
	})
}

// TestOverflowSleep: a timeout of the largest delay never fires and does
// not hold up others; one of the most negative delay fires at once.
func TestStdlibOverflowSleep(t *testing.T) {
	const big = time.Duration(int64(1<<63 - 1))
	h := msTimer(t)
	bigFired, smallFired := make(chan struct{}, 1), make(chan struct{}, 1)
	_, err := h.AfterFunc(big, func() { bigFired <- struct{}{} })
	require.NoError(t, err)
	_, err = h.AfterFunc(25*time.Millisecond, func() { smallFired <- struct{}{} })
	require.NoError(t, err)
	select {
	case <-bigFired:
		t.Fatalf("big timeout fired")
	case <-smallFired:
		// OK
	case <-time.After(10 * time.Second):
		t.Fatalf("the 25ms timeout did not fire")
	}

	const neg = time.Duration(-1 << 63)
	negFired := make(chan struct{}, 1)
	_, err = h.AfterFunc(neg, func() { negFired <- struct{}{} })
	require.NoError(t, err)
	select {
	case <-negFired:
		// OK
	case <-time.After(1 * time.Second):
		t.Fatalf("negative timeout didn't fire")
	}
	assert.Empty(t, bigFired, "big timeout fired")
}

// TestOverflowPeriodRuntimeTimer: a periodic timeout of the largest
// period, made due at once, runs once, never again, and neither makes the
// worker spin nor holds up other timeouts, also when the worker reaches it
// late.
func TestStdlibOverflowPeriodRuntimeTimer(t *testing.T) {
	for _, late := range []time.Duration{0, 5 * testTick} {
		t.Run(fmt.Sprintf("late=%v", late), func(t *testing.T) {
			h, fake := newFakeTimer(t)
			runs := 0
			to, err := h.Every(math.MaxInt64, func() { runs++ })
			require.NoError(t, err)
			require.True(t, to.Reset(0), "due at once")
			fake.Jump(late)
			settleWithin(t, fake, h, 10*time.Second)
			fake.Advance(testTick)
			require.Equal(t, 1, runs)
			other := 0
			_, err = h.AfterFunc(25*time.Millisecond, func() { other++ })
			require.NoError(t, err)
			fake.Advance(time.Hour)
			settleWithin(t, fake, h, 10*time.Second)
			assert.Equal(t, 1, other, "other timeouts still run")
			assert.Equal(t, 1, runs, "the next run, a period away, never comes")
			assert.Equal(t, int64(math.MaxInt64), deadlineOf(to.(*timeout).word.Load()), "clamped, not wrapped")
			assert.True(t, to.Cancel())
		})
	}
}

// TestIssue5745: a panic in code holding a ticker, here a nil timeout's
// Cancel, leaves the timer working: the ticker's Cancel in a deferred
// call returns true and other timeouts still run. The panicking subtest
// does the same from a task the worker runs.
func TestStdlibIssue5745(t *testing.T) {
	h, fake := newFakeTimer(t)
	ticker, err := h.Every(time.Hour, func() {})
	require.NoError(t, err)
	func() {
		defer func() {
			assert.True(t, ticker.Cancel())
			if r := recover(); r == nil {
				t.Error("Expected panic, but none happened.")
			}
		}()
		// cause a panic due to a nil dereference
		var timer *timeout
		timer.Cancel()
		t.Error("Should be unreachable.")
	}()
	t.Run("in a task", func(t *testing.T) {
		ticker, err := h.Every(time.Hour, func() {})
		require.NoError(t, err)
		var timer *timeout
		_, err = h.AfterFunc(0, func() { timer.Cancel() })
		require.NoError(t, err)
		fake.Advance(testTick)
		assert.True(t, ticker.Cancel())
	})
	ran := false
	_, err = h.AfterFunc(0, func() { ran = true })
	require.NoError(t, err)
	fake.Advance(testTick)
	assert.True(t, ran, "the timer still runs timeouts")
}

// TestZeroTimer: a zero-delay timeout is never missed, and runs within two
// seconds, a thousand times in a row (the time package: a million, not
// under -short). The Reset subtest stands for the time package's reused
// timer: a timeout parked an hour away, Reset to zero.
func TestStdlibZeroTimer(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	t.Run("AfterFunc", func(t *testing.T) {
		testZeroTimer(t, n, func(h *HashedWheelTimer, f func()) {
			_, err := h.AfterFunc(0, f)
			require.NoError(t, err)
		})
	})
	t.Run("Reset", func(t *testing.T) {
		testZeroTimer(t, n, func(h *HashedWheelTimer, f func()) {
			to, err := h.AfterFunc(time.Hour, f)
			require.NoError(t, err)
			require.True(t, to.Reset(0))
		})
	})
}

func testZeroTimer(t *testing.T, n int, zero func(h *HashedWheelTimer, f func())) {
	h := msTimer(t)
	fired := make(chan struct{}, 1)
	for i := 0; i < n; i++ {
		s := time.Now()
		zero(h, func() { fired <- struct{}{} })
		recvWithin(t, fired, 10*time.Second, "a zero-delay timeout")
		if diff := time.Since(s); diff > 2*time.Second {
			t.Errorf("Expected the timeout to run in less than 2 sec, took %v", diff)
		}
	}
}

// TestTimerModifiedEarlier: a timeout moved back and forth between an hour
// away and the past ten times runs, once, within eight seconds. Where the
// time package stops the timer before each Reset, the wheel's Reset moves
// the pending timeout itself.
func TestStdlibTimerModifiedEarlier(t *testing.T) {
	h := msTimer(t)
	past := time.Until(time.Unix(0, 0))
	count := 1000
	if testing.Short() {
		count = 100
	}
	fail := 0
	for i := 0; i < count; i++ {
		fired := make(chan struct{}, 2)
		timer, err := h.AfterFunc(time.Hour, func() { fired <- struct{}{} })
		require.NoError(t, err)
		for j := 0; j < 10; j++ {
			timer.Reset(time.Hour)
			timer.Reset(past)
		}

		now := time.Now()
		select {
		case <-fired:
			if since := time.Since(now); since > 8*time.Second {
				t.Errorf("timer took too long (%v)", since)
				fail++
			}
		case <-time.After(10 * time.Second):
			t.Fatal("deadline expired")
		}
		assert.False(t, timer.Reset(time.Hour), "a Reset once it ran returns false")
		assert.Empty(t, fired, "it ran once")
	}

	if fail > 0 {
		t.Errorf("%d failures", fail)
	}
}

// TestAdjustTimers: a hundred timeouts, interleaved at random, moved
// later and earlier, cancelled and made anew, lose none of their runs:
// each Reset to zero runs within 750ms. Where the time package re-arms a
// fired or stopped timer with Reset, the wheel's Reset returns false
// (TestStdlibDifferenceResetDoesNotRearm) and the test schedules anew.
func TestStdlibAdjustTimers(t *testing.T) {
	h := msTimer(t)
	var rnd = rand.New(rand.NewSource(time.Now().UnixNano()))

	timers := make([]Timeout, 100)
	fired := make([]chan struct{}, len(timers))
	states := make([]int, len(timers))
	indices := rnd.Perm(len(timers))
	arm := func(i int, d time.Duration) {
		to, err := h.AfterFunc(d, func() { fired[i] <- struct{}{} })
		require.NoError(t, err)
		timers[i] = to
	}
	for i := range fired {
		fired[i] = make(chan struct{}, 4)
	}

	for len(indices) != 0 {
		var ii = rnd.Intn(len(indices))
		var i = indices[ii]

		var timer = timers[i]
		var state = states[i]
		states[i]++

		switch state {
		case 0:
			arm(i, 0)

		case 1:
			recvWithin(t, fired[i], 10*time.Second, "a zero-delay timeout") // Timer is now idle.

		// Reset to various long durations, which we'll cancel.
		case 2:
			require.False(t, timer.Reset(1*time.Minute), "shouldn't be active (1)")
			arm(i, time.Minute)
		case 3:
			require.True(t, timer.Cancel(), "timer %d state %d Cancel returned false", i, state)
		case 4:
			require.False(t, timer.Reset(3*time.Minute), "shouldn't be active (3)")
			arm(i, 3*time.Minute)
		case 5:
			require.True(t, timer.Reset(1*time.Minute), "earlier")
		case 6:
			require.True(t, timer.Reset(2*time.Minute), "later")

		// Start a short-duration timer we expect to run at once.
		case 7:
			require.True(t, timer.Reset(0))
		case 8:
			now := time.Now()
			recvWithin(t, fired[i], 10*time.Second, "a timeout Reset to zero")
			dur := time.Since(now)
			if dur > 750*time.Millisecond {
				t.Errorf("timer %d took %v to complete", i, dur)
			}

		// Timer is done. Swap with tail and remove.
		case 9:
			indices[ii] = indices[len(indices)-1]
			indices = indices[:len(indices)-1]
		}
	}
	assert.Empty(t, h.Stop(), "nothing left pending")
	for i := range fired {
		assert.Empty(t, fired[i], "timer %d ran once more", i)
	}
}

func TestStdlibStopResult(t *testing.T) {
	testStopResetResult(t, true)
}

func TestStdlibResetResult(t *testing.T) {
	testStopResetResult(t, false)
}

// testStopResetResult: when a Cancel, or a Reset an hour away, races the
// run of its timeout, its result says whether the function runs: false,
// it runs (now, once); true, it does not. Two timeouts are made due
// together; the one that runs second is cancelled or reset as the first
// runs. The time package's 1000 goroutines making 100 pairs each are 100
// making 50 here (20 making 20 under -short), on the wheel's 1ms tick.
func testStopResetResult(t *testing.T, testStop bool) {
	h := msTimer(t)
	stopOrReset := func(timer Timeout) bool {
		if testStop {
			return timer.Cancel()
		}
		return timer.Reset(1 * time.Hour)
	}

	goroutines, pairs := 100, 50
	if testing.Short() {
		goroutines, pairs = 20, 20
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var kept []chan struct{} // the functions of the timeouts whose Cancel or Reset returned true
	wg.Add(goroutines)
	for range goroutines {
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < pairs; j++ {
				c1, c2 := make(chan struct{}, 2), make(chan struct{}, 2)
				timer1, err := h.AfterFunc(1*time.Millisecond, func() { c1 <- struct{}{} })
				assert.NoError(t, err)
				timer2, err := h.AfterFunc(1*time.Millisecond, func() { c2 <- struct{}{} })
				assert.NoError(t, err)
				if err != nil {
					return
				}
				other, otherC := timer2, c2
				select {
				case <-c1:
				case <-c2:
					other, otherC = timer1, c1
				case <-time.After(30 * time.Second):
					t.Error("neither timeout ran within 30s")
					return
				}
				if stopOrReset(other) {
					mu.Lock()
					kept = append(kept, otherC)
					mu.Unlock()
					continue
				}
				// The test fails if this run never comes.
				select {
				case <-otherC:
				case <-time.After(30 * time.Second):
					t.Error("Cancel or Reset returned false, and the function did not run within 30s")
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	left := h.Stop() // waits for every run it started
	for _, c := range kept {
		assert.Empty(t, c, "Cancel or Reset returned true, and the function ran")
	}
	if testStop {
		assert.Empty(t, left)
	} else {
		assert.Len(t, left, len(kept), "each timeout Reset an hour away is still pending")
	}
	t.Logf("%d of %d races won by Cancel or Reset", len(kept), goroutines*pairs)
}

// multiWakeupGoroutines is the number of goroutines of the MultiWakeup
// tests, where the time package's use GOMAXPROCS: a fixed number, so that
// the tests depend on no core count.
const multiWakeupGoroutines = 8

// TestMultiWakeupTicker: goroutines Reset one ticker while it runs every
// tick, and stop it together: its runs never overlap, it keeps running
// afterwards, and of the goroutines' Cancel calls exactly one returns
// true. The time package's goroutines wake on the ticker's channel; here
// they act on the ticker itself.
func TestStdlibMultiWakeupTicker(t *testing.T) {
	rounds := 10000
	if testing.Short() {
		rounds = 1000
	}
	h := msTimer(t)
	var running, overlaps atomic.Int32
	ticks := make(chan struct{}, 1)
	ticker, err := h.Every(time.Millisecond, func() {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		select {
		case ticks <- struct{}{}:
		default:
		}
		running.Add(-1)
	})
	require.NoError(t, err)
	var refused atomic.Int32
	racetest.Run(multiWakeupGoroutines, rounds, func(int, int) {
		if !ticker.Reset(time.Millisecond) {
			refused.Add(1)
		}
	})()
	assert.Zero(t, refused.Load(), "Reset of a running ticker returned false")
	for range 2 {
		recvWithin(t, ticks, 10*time.Second, "a run after the Resets")
	}
	var cancelled atomic.Int32
	start, wait := concurrently(multiWakeupGoroutines, func(int) {
		if ticker.Cancel() {
			cancelled.Add(1)
		}
	})
	start()
	wait()
	h.Stop()
	assert.Equal(t, int32(1), cancelled.Load(), "Cancel returns true once")
	assert.Zero(t, overlaps.Load(), "runs overlapped")
}

// TestMultiWakeupTimer: goroutines Reset one timeout to a nanosecond,
// ten thousand times each, racing its run: it runs exactly once, and every
// Reset after that returns false.
func TestStdlibMultiWakeupTimer(t *testing.T) {
	rounds := 10000
	if testing.Short() {
		rounds = 1000
	}
	h := msTimer(t)
	var runs atomic.Int32
	ran := make(chan struct{}, 2) // room for a second run, which fails the test
	timer, err := h.AfterFunc(time.Nanosecond, func() {
		runs.Add(1)
		ran <- struct{}{}
	})
	require.NoError(t, err)
	racetest.Run(multiWakeupGoroutines, rounds, func(int, int) { timer.Reset(time.Nanosecond) })()
	recvWithin(t, ran, 10*time.Second, "the run")
	assert.False(t, timer.Reset(time.Nanosecond))
	h.Stop()
	assert.Equal(t, int32(1), runs.Load(), "it ran once")
}

// TestTicker: a ticker of delta delivers count/2 ticks in count/2 deltas,
// then, at twice the period, the rest in twice that, within 30%; once
// cancelled it delivers nothing. Ticker.Reset sets a new period, Every's
// Reset keeps it (TestStdlibDifferenceResetKeepsThePeriod): the new period
// is a new Every.
func TestStdlibTicker(t *testing.T) {
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
		t0 := time.Now()
		ticker, c := everyTicker(t, h, delta)
		for range count / 2 {
			recvWithin(t, c, time.Minute, "a tick")
		}
		require.True(t, ticker.Cancel())
		ticker, c = everyTicker(t, h, delta*2)
		for range count - count/2 {
			recvWithin(t, c, time.Minute, "a tick")
		}
		require.True(t, ticker.Cancel())
		t1 := time.Now()
		dt := t1.Sub(t0)
		target := 3 * delta * time.Duration(count/2)
		slop := target * 3 / 10
		require.GreaterOrEqual(t, dt, target, "the ticks came early") // the wheel's runs are never early
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
		case <-c:
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
// cancelled, without deadlock.
func TestStdlibTeardown(t *testing.T) {
	t.Parallel()

	Delta := 100 * time.Millisecond
	if testing.Short() {
		Delta = 20 * time.Millisecond
	}
	h := msTimer(t)
	for range 3 {
		ticker, c := everyTicker(t, h, Delta)
		recvWithin(t, c, time.Minute, "the first tick")
		assert.True(t, ticker.Cancel())
	}
}

// TestTick: a negative period gives no ticker, as Tick(-1) gives a nil
// channel; Every says why.
func TestStdlibTick(t *testing.T) {
	h, _ := newFakeTimer(t)
	got, err := h.Every(-1, func() {})
	assert.Nil(t, got, "Every(-1)")
	assert.ErrorIs(t, err, ErrInvalidPeriod)
}

// TestNewTickerLtZeroDuration: where NewTicker panics for a period of
// zero or less, Every returns an error that names the period and
// schedules nothing.
func TestStdlibNewTickerLtZeroDuration(t *testing.T) {
	h, _ := newFakeTimer(t)
	for _, period := range []time.Duration{-1, 0} {
		require.NotPanics(t, func() {
			_, err := h.Every(period, func() {})
			require.ErrorIs(t, err, ErrInvalidPeriod)
			assert.Contains(t, err.Error(), fmt.Sprintf("Every(%v)", period))
		})
	}
	assert.Zero(t, h.Stats().Scheduled)
}

// TestTickerResetLtZeroDuration: where Ticker.Reset panics for a delay of
// zero or less, Reset of Every's timeout returns true and makes the next
// run due at once: it runs at the end of the tick, then a period later.
func TestStdlibTickerResetLtZeroDuration(t *testing.T) {
	for _, d := range []time.Duration{0, -1} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			h, fake := newFakeTimer(t)
			var runs []int64
			tk, err := h.Every(time.Second, func() { runs = append(runs, fake.Nanotime()) })
			require.NoError(t, err)
			require.NotPanics(t, func() { assert.True(t, tk.Reset(d)) })
			advance(fake, testTick)
			assert.Equal(t, []int64{int64(testTick)}, runs, "due at once: run at the tick's end")
			advance(fake, time.Second)
			assert.Equal(t, []int64{int64(testTick), int64(testTick + time.Second)}, runs, "then a period later")
		})
	}
}

// TestLongAdjustTimers: with five thousand timeouts due together, a
// goroutine ping-pong that makes and cancels a 5s timeout for every
// exchange, 100 000 of them (10 000 under -short; the time package's
// million), runs through with none of those timeouts firing, within the
// time package's minute.
func TestStdlibLongAdjustTimers(t *testing.T) {
	rounds := 5000
	if testing.Short() {
		rounds = 500
	}
	h := msTimer(t)
	var wg sync.WaitGroup
	defer wg.Wait()

	// Build up the timer wheel.
	const count = 5000
	wg.Add(count)
	for range count {
		go func() {
			_, err := h.AfterFunc(10*time.Microsecond, wg.Done)
			if !assert.NoError(t, err) {
				wg.Done()
			}
		}()
	}

	// Give ourselves 60 seconds to complete.
	done := make(chan bool)
	watchdog, err := h.AfterFunc(60*time.Second, func() { close(done) })
	require.NoError(t, err)
	defer watchdog.Cancel()

	// Set up a queuing goroutine to ping pong through the scheduler.
	inQ := make(chan func())
	outQ := make(chan func())

	defer close(inQ)

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(outQ)
		var q []func()
		for {
			var sendTo chan func()
			var send func()
			if len(q) > 0 {
				sendTo = outQ
				send = q[0]
			}
			select {
			case sendTo <- send:
				q = q[1:]
			case f, ok := <-inQ:
				if !ok {
					return
				}
				q = append(q, f)
			case <-done:
				return
			}
		}
	}()

	for i := range rounds {
		const try = 20
		for range try {
			inQ <- func() {}
		}
		for range try {
			after := make(chan struct{})
			to, err := h.AfterFunc(5*time.Second, func() { close(after) })
			require.NoError(t, err)
			select {
			case _, ok := <-outQ:
				if !ok {
					t.Fatal("output channel is closed")
				}
			case <-after:
				t.Fatalf("failed to read work, iteration %d", i)
			case <-done:
				t.Fatal("timer expired")
			}
			require.True(t, to.Cancel())
		}
	}
}

// TestTimerGC: AfterFunc(Hour) or Every(Hour), cancelled, leaves nothing
// allocated once the worker has processed the cancellations, ten thousand
// times over.
func TestStdlibTimerGC(t *testing.T) {
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

	run(t, "AfterFuncCancel", func(t *testing.T, h *HashedWheelTimer) {
		to, err := h.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		require.True(t, to.Cancel())
	})
	run(t, "EveryCancel", func(t *testing.T, h *HashedWheelTimer) {
		to, err := h.Every(time.Hour, func() {})
		require.NoError(t, err)
		require.True(t, to.Cancel())
	})
}

// The wheel's deliberate differences from the time package.

// TestStdlibDifferenceResolutionIsTheTick: a timeout runs at the end of
// the tick covering its deadline, up to a tick after it, where
// time.AfterFunc runs as soon as the runtime gets to it.
func TestStdlibDifferenceResolutionIsTheTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	var at []int64
	record := func() { at = append(at, fake.Nanotime()) }
	_, err := h.AfterFunc(time.Millisecond, record)
	require.NoError(t, err)
	_, err = h.AfterFunc(testTick+1, record)
	require.NoError(t, err)
	fake.Advance(testTick - 1)
	assert.Empty(t, at, "a 1ms timeout waits for the end of its 10ms tick")
	fake.Advance(1)
	assert.Equal(t, []int64{int64(testTick)}, at, "and runs then")
	fake.Advance(testTick)
	assert.Equal(t, []int64{int64(testTick), int64(2 * testTick)}, at,
		"a deadline a nanosecond into a tick runs at its end, never before")
}

// TestStdlibDifferenceEveryRefusesAPeriodBelowTheTick: Every refuses a
// period it could not keep, shorter than the tick, where NewTicker takes
// any positive period, and a period of zero or less, where NewTicker
// panics; it never panics.
func TestStdlibDifferenceEveryRefusesAPeriodBelowTheTick(t *testing.T) {
	h, _ := newFakeTimer(t)
	for _, period := range []time.Duration{math.MinInt64, -1, 0, 1, testTick / 2, testTick - 1} {
		require.NotPanics(t, func() {
			to, err := h.Every(period, func() {})
			assert.Nil(t, to, "Every(%v)", period)
			assert.ErrorIs(t, err, ErrInvalidPeriod, "Every(%v)", period)
		})
	}
	assert.Zero(t, h.Stats().Scheduled, "nothing scheduled")
	to, err := h.Every(testTick, func() {})
	require.NoError(t, err, "a period of one tick is kept")
	assert.True(t, to.Cancel())
}

// TestStdlibDifferenceResetKeepsThePeriod: Reset of Every's timeout moves
// the next run and keeps the period, where Ticker.Reset(d) makes d the
// period; a new period is a Cancel and a new Every.
func TestStdlibDifferenceResetKeepsThePeriod(t *testing.T) {
	h, fake := newFakeTimer(t)
	var runs []int64
	record := func() { runs = append(runs, fake.Nanotime()/int64(testTick)) }
	ticker, err := h.Every(2*testTick, record)
	require.NoError(t, err)
	require.True(t, ticker.Reset(5*testTick))
	advance(fake, 9*testTick)
	assert.Equal(t, []int64{5, 7, 9}, runs, "the next run moved, and the period stayed two ticks")

	require.True(t, ticker.Cancel())
	runs = nil
	_, err = h.Every(5*testTick, record)
	require.NoError(t, err)
	advance(fake, 11*testTick)
	assert.Equal(t, []int64{14, 19}, runs, "Ticker.Reset(5 ticks)'s effect: Cancel and Every(5 ticks)")
}

// TestStdlibDifferenceResetDoesNotRearm: once a timeout has run or been
// cancelled, Reset returns false and changes nothing, where Timer.Reset
// re-arms a fired or stopped timer; the caller schedules anew.
func TestStdlibDifferenceResetDoesNotRearm(t *testing.T) {
	h, fake := newFakeTimer(t)
	fired, cancelledRuns := 0, 0
	ran, err := h.AfterFunc(0, func() { fired++ })
	require.NoError(t, err)
	cancelled, err := h.AfterFunc(time.Hour, func() { cancelledRuns++ })
	require.NoError(t, err)
	advance(fake, testTick)
	require.Equal(t, 1, fired)
	require.True(t, cancelled.Cancel())

	assert.False(t, ran.Reset(testTick), "Reset of a timeout that ran")
	assert.False(t, cancelled.Reset(testTick), "Reset of a cancelled timeout")
	advance(fake, 3*testTick)
	assert.Equal(t, 1, fired, "not run again")
	assert.Zero(t, cancelledRuns, "not re-armed")
	assert.True(t, cancelled.IsCancelled())
	assert.True(t, ran.IsExpired())
}

// TestStdlibDifferenceEveryRunsAFunction: Every has no channel. Where a
// Ticker's channel holds one tick for a slow receiver and drops the
// others, a run of Every due while the previous one runs is owed and
// starts as soon as that one returns, without waiting for a tick, and the
// runs due meanwhile are skipped and counted in Stats.PeriodicSkipped.
func TestStdlibDifferenceEveryRunsAFunction(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(goExecutor{}))
	var runs atomic.Int32
	started := make(chan int32, 10)
	release := make(chan struct{})
	_, err := h.Every(testTick, func() {
		n := runs.Add(1)
		started <- n
		if n == 1 {
			<-release // a receiver slow by three periods
		}
	})
	require.NoError(t, err)
	advance(fake, testTick)
	require.Equal(t, int32(1), recvWithin(t, started, 10*time.Second, "the first run"))
	advance(fake, 3*testTick)
	require.Empty(t, started, "no run starts while the first runs")
	close(release) // the clock stands still: no tick comes
	assert.Equal(t, int32(2), recvWithin(t, started, 10*time.Second, "the owed run"),
		"the owed run starts as the slow one returns")
	assert.Equal(t, uint64(2), h.Stats().PeriodicSkipped, "one run owed, the two after it skipped")
}
