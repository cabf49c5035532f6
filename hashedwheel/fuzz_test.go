package hashedwheel

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/pool"
)

// The fuzz targets. make fuzz runs each with go test -fuzz (see
// scripts/fuzz.sh); go test runs their seed corpus, in
// testdata/fuzz/<FuzzName>/ and in the f.Add calls, as ordinary tests.

// fuzzMaxStartedWheel caps the wheels FuzzOptions starts: a wheel costs 24
// bytes per bucket, so the largest would take 48 MiB each time. Larger
// ones are checked with New only, which does not allocate the wheel.
const fuzzMaxStartedWheel = 1 << 12

// fuzzMaxTicks caps the ticks FuzzOptions makes the worker process.
const fuzzMaxTicks = 4096

// fuzzClockStart is the fake clock's reading when FuzzOptions makes a timer.
const fuzzClockStart = 1 << 40

// FuzzOptions checks option validation for any tick, wheel size and pending
// limit, and, for a valid configuration, the life of one timeout with any
// delay made at any time after the start: its deadline is the clock plus
// the delay, clamped to math.MaxInt64 instead of overflowing; it does not
// fire one nanosecond before the end of the tick that covers it and fires
// exactly at that end; one that is too far to reach is returned by Stop.
func FuzzOptions(f *testing.F) {
	ms := int64(time.Millisecond)
	f.Add(int64(100*time.Millisecond), 512, int64(0), int64(0), int64(time.Second))
	f.Add(ms, 1, int64(1), int64(0), int64(0))
	f.Add(int64(1), 3, int64(-1), int64(12345), int64(-1))         // sub-ms tick: invalid
	f.Add(int64(0), 512, int64(0), int64(0), int64(0))             // invalid tick
	f.Add(int64(-5), 512, int64(0), int64(0), int64(0))            // invalid tick
	f.Add(ms, 0, int64(0), int64(0), int64(0))                     // invalid wheel
	f.Add(ms, 1<<21+1, int64(0), int64(0), int64(0))               // invalid wheel
	f.Add(ms, 1<<30, int64(0), int64(0), int64(0))                 // invalid wheel
	f.Add(ms, 1<<21, int64(0), int64(0), int64(0))                 // largest wheel: New only
	f.Add(int64(math.MaxInt64), 1, int64(0), int64(0), int64(0))   // tick overflows the wheel
	f.Add(int64(math.MaxInt64/2), 2, int64(0), int64(0), int64(0)) // just too long
	f.Add(10*ms, 8, int64(0), int64(0), int64(math.MaxInt64))
	f.Add(10*ms, 8, int64(0), int64(1<<61), int64(math.MaxInt64)) // overflows: clamped
	f.Add(10*ms, 8, int64(0), int64(7), int64(math.MinInt64))
	f.Add(10*ms, 8, int64(0), int64(25*ms), int64(5*ms)) // deadline on a tick end
	f.Fuzz(func(t *testing.T, tickNs int64, wheel int, maxPending, elapsedNs, delayNs int64) {
		defer fuzzWatchdog("FuzzOptions")()
		fuzzOptions(t, time.Duration(tickNs), wheel, maxPending, elapsedNs, time.Duration(delayNs))
	})
}

func fuzzOptions(t *testing.T, tick time.Duration, wheel int, maxPending, elapsed int64, delay time.Duration) {
	logs, logger := newLogBuffer()
	fake := newFakeAt(fuzzClockStart)
	h, err := New(WithTickDuration(tick), WithTicksPerWheel(wheel), WithMaxPendingTimeouts(maxPending),
		WithExecutor(pool.Inline), WithLogger(logger), WithClock(fake))

	// The expected outcome of validation: each option is checked, then,
	// if all are valid, the tick against the wheel size.
	var wantOption, wantValue string
	rounded := 0
	switch {
	case tick < MinTickDuration:
		wantOption, wantValue = "WithTickDuration", tick.String()
	case wheel < 1 || wheel > MaxTicksPerWheel:
		wantOption, wantValue = "WithTicksPerWheel", fmt.Sprint(wheel)
	default:
		rounded = 1 << bits.Len(uint(wheel-1))
		if int64(tick) >= math.MaxInt64/int64(rounded) {
			wantOption, wantValue = "WithTickDuration", tick.String()
		}
	}
	if wantOption != "" {
		if err == nil {
			h.Stop()
		}
		require.ErrorIs(t, err, ErrInvalidOption, "New(tick %d, wheel %d): want an error naming %s", tick, wheel, wantOption)
		require.ErrorContains(t, err, wantOption, "New(tick %d, wheel %d)", tick, wheel)
		require.ErrorContains(t, err, wantValue, "New(tick %d, wheel %d)", tick, wheel)
		return
	}
	require.NoError(t, err, "New(tick %d, wheel %d, maxPending %d)", tick, wheel, maxPending)
	defer h.Stop()
	require.Equal(t, []int64{int64(tick), int64(rounded), max(maxPending, 0)},
		[]int64{int64(h.config.tickDuration), int64(h.config.ticksPerWheel), h.maxPending},
		"New(tick %v, wheel %d, maxPending %d): the tick, wheel and limit configured", tick, wheel, maxPending)
	require.NotContains(t, logs.String(), "level=WARN", "tick %v: nothing to warn of; log: %s", tick, logs.String())
	if rounded > fuzzMaxStartedWheel {
		return // validated; too large to start here
	}

	require.NoError(t, h.Start())
	fuzzSettle(t, fake, h)
	// Let time pass with nothing pending: the idle worker skips it.
	elapsed &= 1<<61 - 1
	fake.Jump(time.Duration(elapsed))
	fuzzSettle(t, fake, h)

	fired := make(chan int64, 2)
	task := TaskFunc(func(Timeout) { fired <- fake.Nanotime() - fuzzClockStart })
	to, err := h.NewTimeout(task, delay)
	require.NoError(t, err, "NewTimeout(%d) at %d", delay, elapsed)
	fuzzSettle(t, fake, h)
	deadline := modelDeadline(elapsed, delay)
	want := startTime(h).Add(time.Duration(deadline))
	require.True(t, to.Deadline().Equal(want), "NewTimeout(%d) at %d: Deadline() %v, want start+%d = %v",
		delay, elapsed, to.Deadline(), deadline, want)
	if maxPending == 1 {
		_, err := h.NewTimeout(task, 0)
		require.ErrorIs(t, err, ErrTooManyPendingTimeouts, "second NewTimeout with limit 1")
	}

	tk := int64(tick)
	cur := elapsed / tk
	fireTick := max(modelDueTick(deadline, tk), cur)
	// Reachable: within fuzzMaxTicks ticks, and its tick ends by 1<<62.
	reachable := fireTick-cur < fuzzMaxTicks && fireTick+1 <= (1<<62)/tk
	if reachable {
		end := (fireTick + 1) * tk // the clock, after the start, when it fires
		if end-1 > elapsed {
			fake.Jump(time.Duration(end - 1 - elapsed))
			fuzzSettle(t, fake, h)
		}
		select {
		case at := <-fired:
			require.Fail(t, fmt.Sprintf("delay %d at %d (deadline %d, tick %d): fired at %d, before the end of its tick %d",
				delay, elapsed, deadline, tk, at, end))
		default:
		}
		require.Equal(t, int64(1), h.PendingTimeouts(), "before its tick ends")
		require.False(t, to.IsExpired(), "before its tick ends")
		fake.Jump(time.Duration(end - max(end-1, elapsed)))
		fuzzSettle(t, fake, h)
		select {
		case at := <-fired:
			require.True(t, at == end && at >= deadline, "delay %d at %d (deadline %d, tick %d): fired at %d, want %d",
				delay, elapsed, deadline, tk, at, end)
		default:
			require.Fail(t, fmt.Sprintf("delay %d at %d (deadline %d, tick %d): not fired at the end of its tick %d",
				delay, elapsed, deadline, tk, end))
		}
		require.Zero(t, h.PendingTimeouts(), "after firing")
		require.True(t, to.IsExpired(), "after firing")
		require.False(t, to.Cancel(), "Cancel after firing")
	} else {
		// Too far to reach: move the clock up to fuzzMaxTicks ticks, but
		// not past the start of its tick, nor past 1<<62.
		target := min(fireTick*tk, 1<<62)
		if tk <= (1<<62)/fuzzMaxTicks {
			target = min(target, elapsed+fuzzMaxTicks*tk)
		}
		jump := max(target-elapsed, 0)
		fake.Jump(time.Duration(jump))
		fuzzSettle(t, fake, h)
		require.True(t, len(fired) == 0 && h.PendingTimeouts() == 1,
			"delay %d at %d (deadline %d, fire tick %d): fired %d times, pending %d after %d ns",
			delay, elapsed, deadline, fireTick, len(fired), h.PendingTimeouts(), jump)
		require.Equal(t, []Timeout{to}, h.Stop(), "Stop returns the pending timeout")
		require.True(t, to.IsCancelled(), "returned by Stop, so cancelled")
	}
	h.Stop()
	s := h.Stats()
	require.True(t, s.Scheduled == 1 && s.Expired+s.ReturnedByStop == 1 && s.Pending == 0, "Stats after Stop: %+v", s)
}

// fuzzSettleTimeout bounds the real time a Settle may take: the worker
// processes at most fuzzMaxTicks ticks, far less than this.
const fuzzSettleTimeout = 5 * time.Second

// fuzzSettle is settleWithin with the fuzz targets' bound, then checks
// the wheel's invariants while the worker sleeps.
func fuzzSettle(tb testing.TB, fake *clock.Fake, h *HashedWheelTimer) {
	tb.Helper()
	settleWithin(tb, fake, h, fuzzSettleTimeout)
	require.NoError(tb, verifyWheel(h), "the wheel's invariants")
}

// fuzzHangAfter is how long one fuzz input may run: each takes
// milliseconds, so one that runs this long is hung.
const fuzzHangAfter = 30 * time.Second

// fuzzWatchdog crashes the process with every goroutine's stack if the
// input being run hangs: the fuzzer then reports and saves the input,
// where a hang would only stall it. Call the returned func when done.
func fuzzWatchdog(target string) func() {
	w := time.AfterFunc(fuzzHangAfter, func() {
		buf := make([]byte, 4<<20)
		panic(fmt.Sprintf("%s: an input ran for %v, hung:\n%s", target, fuzzHangAfter, buf[:runtime.Stack(buf, true)]))
	})
	return func() { w.Stop() }
}

// TestFuzzHugeWheelIsValidatedWithoutAllocating checks that New accepts
// the largest wheel without allocating it: only Start builds the wheel.
func TestFuzzHugeWheelIsValidatedWithoutAllocating(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h, err := New(WithTicksPerWheel(MaxTicksPerWheel), WithTickDuration(time.Millisecond),
		WithLogger(discardLogger()))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, MaxTicksPerWheel, h.config.ticksPerWheel)
	require.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes New allocated with the largest wheel")
	require.Nil(t, h.Stop(), "Stop before Start")
	require.ErrorIs(t, h.Start(), ErrStopped, "Start after Stop")
}

// FuzzModelOps drives the model of model_test.go with operation sequences
// decoded from the fuzzer's bytes.
func FuzzModelOps(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Add(bytes.Repeat([]byte{0x50, 0x10, 0x03, 0x7f, 0x20}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzWatchdog("FuzzModelOps")()
		var trace modelTrace
		if err := modelRun(modelNewByteSource(data), 64, &trace); err != nil {
			t.Fatalf("%v\nsteps:\n%s", err, trace.tail(40))
		}
	})
}
