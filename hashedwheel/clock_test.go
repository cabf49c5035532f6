package hashedwheel

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Time, for the timer, is the monotonic clock.Clock it is given and
// nothing else. The worker reads no wall clock, so a step of the wall
// clock (NTP, an administrator, a VM resuming) cannot move a deadline:
// TestClockWorkerReadsOnlyTheInjectedClock proves from the source that no
// runtime clock is read, and TestClockNothingMovesWithoutTheInjectedClock proves it at run time
// with a frozen fake clock. Forward jumps of the monotonic clock itself
// (a suspended machine resuming) make due timeouts fire late, never early.

// TestClockNothingMovesWithoutTheInjectedClock lets real time pass while
// the fake clock stands still: no tick is processed and nothing fires, so
// the worker takes time from the injected clock alone. Then the fake clock
// alone fires the timeout, at its deadline, the end of the tick covering it.
func TestClockNothingMovesWithoutTheInjectedClock(t *testing.T) {
	fake := newFakeAt(5 * time.Second)
	h := newTimerOn(t, fake, WithExecutor(pool.Inline), WithTickDuration(time.Millisecond))
	rec := &runRecorder{now: fake.Nanotime}
	start := fake.Nanotime()
	mustSchedule(t, h, rec, time.Millisecond)
	fake.WaitAsleep()
	// Real time is the subject here: 50 ticks' worth of it pass.
	time.Sleep(50 * time.Millisecond)
	fake.WaitAsleep()
	s := h.Stats()
	require.True(t, s.Ticks == 0 && len(rec.runs()) == 0 && s.Pending == 1,
		"after 50ms of real time and none of the fake clock: %d ticks, %d runs, pending %d", s.Ticks, len(rec.runs()), s.Pending)
	require.Equal(t, start+int64(time.Millisecond), sleepingUntil(h),
		"the worker sleeps until the end of tick 0 on the fake clock")
	// The deadline, 1ms, is the end of tick 0, which covers it.
	fake.Jump(time.Millisecond - 1)
	fake.WaitAsleep()
	require.Empty(t, rec.runs(), "fired 1ns before its deadline")
	fake.Jump(1)
	fake.WaitAsleep()
	require.Equal(t, []int64{start + int64(time.Millisecond)}, rec.runs(), "one run, at start+1ms, its deadline")
	require.Equal(t, uint64(1), h.Stats().Ticks, "ticks processed: tick 0 held nothing due")
}

// TestClockWorkerReadsOnlyTheInjectedClock checks the source of the
// package: no non-test file calls a wall-clock or runtime-timer function of
// package time, except context.go, whose API speaks in time.Time deadlines
// that it turns into delays, and fallback.go, whose timers keep what the
// wheel cannot; and the timer keeps no wall time of its own
// (a field of type time.Time). So no firing decision can depend on the
// runtime's clock, nor on a wall time read earlier: a Deadline reads the
// injected clock's wall time when asked, and a schedule as it claims each
// run.
func TestClockWorkerReadsOnlyTheInjectedClock(t *testing.T) {
	forbidden := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var calls []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "context.go" || name == "fallback.go" {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			where := fn.Name.Name
			ast.Inspect(fn, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && forbidden[sel.Sel.Name] {
					calls = append(calls, where+": time."+sel.Sel.Name)
				}
				return true
			})
		}
	}
	sort.Strings(calls)
	assert.Empty(t, calls, "wall-clock and runtime-timer calls in the package")
	for _, f := range reflect.VisibleFields(reflect.TypeFor[HashedWheelTimer]()) {
		assert.NotEqual(t, reflect.TypeFor[time.Time](), f.Type, "the timer keeps a wall time: %s", f.Name)
	}
}

// TestClockForwardJumpFiresDueTimeoutsOnly jumps the monotonic clock ten
// minutes ahead at once, as a machine resuming from suspend would: the
// worker processes, back to back, each tick it missed that has something
// due, and skips the others; each due timeout fires once, late and never
// early; the others stay pending.
func TestClockForwardJumpFiresDueTimeoutsOnly(t *testing.T) {
	fake := clock.NewFake(time.Now())
	tick := 10 * time.Millisecond
	h := newTimerOn(t, fake, WithExecutor(pool.Inline), WithTickDuration(tick), WithTicksPerWheel(64))
	delays := []time.Duration{0, time.Millisecond, time.Second, time.Minute, 10*time.Minute - tick - 1,
		10*time.Minute - tick, 10 * time.Minute, time.Hour}
	recs := make([]*runRecorder, len(delays))
	for i, d := range delays {
		recs[i] = &runRecorder{now: fake.Nanotime}
		mustSchedule(t, h, recs[i], d)
	}
	fake.WaitAsleep()
	fake.Jump(10 * time.Minute)
	fake.WaitAsleep()
	for i, d := range delays {
		// Due if the tick covering it, (k·tick, (k+1)·tick], ended by 10 minutes.
		due := modelDueTick(modelDeadline(0, d), int64(tick))+1 <= int64(10*time.Minute/tick)
		if due {
			assert.Equal(t, []int64{int64(10 * time.Minute)}, recs[i].runs(), "delay %v: one run, at the jump's end", d)
		} else {
			assert.Empty(t, recs[i].runs(), "delay %v: ran before its deadline", d)
		}
	}
	s := h.Stats()
	dueTicks := map[int64]bool{}
	for _, d := range delays {
		if tk := modelDueTick(modelDeadline(0, d), int64(tick)); (tk+1)*int64(tick) <= int64(10*time.Minute) {
			dueTicks[tk] = true
		}
	}
	assert.Equal(t, uint64(len(dueTicks)), s.Ticks, "ticks processed: the missed ticks with something due")
	assert.GreaterOrEqual(t, s.MaxTickLag, 10*time.Minute-2*tick, "MaxTickLag after a 10-minute jump")
	assert.Equal(t, int64(1), s.Pending, "the hour")
	assert.Equal(t, uint64(len(delays)-1), s.Expired, "10 minutes, its deadline, included")
}

// TestClockIdleWorkerSkipsTimeInsteadOfReplayingIt lets an hour pass on an
// idle timer: the next timeout counts its delay from the new time, and the
// worker does not replay the hour's ticks.
func TestClockIdleWorkerSkipsTimeInsteadOfReplayingIt(t *testing.T) {
	fake := clock.NewFake(time.Now())
	tick := 10 * time.Millisecond
	h := newTimerOn(t, fake, WithExecutor(pool.Inline), WithTickDuration(tick))
	fake.WaitAsleep()
	fake.Jump(time.Hour + 3*time.Millisecond)
	fake.WaitAsleep()
	rec := &runRecorder{now: fake.Nanotime}
	mustSchedule(t, h, rec, 25*time.Millisecond)
	fake.WaitAsleep()
	// Deadline 1h+28ms: covered by the tick ending at 1h+30ms.
	for _, step := range []time.Duration{7 * time.Millisecond, 10 * time.Millisecond} {
		fake.Jump(step)
		fake.WaitAsleep()
		require.Empty(t, rec.runs(), "fired at %v, before its deadline 1h0m0.028s", time.Duration(fake.Nanotime()))
	}
	fake.Jump(tick)
	fake.WaitAsleep()
	require.Equal(t, []int64{int64(time.Hour + 30*time.Millisecond)}, rec.runs(), "one run, at 1h0m0.03s")
	require.LessOrEqual(t, h.Stats().Ticks, uint64(4), "ticks processed: the idle hour was replayed")
}

// TestClockMaxDelayClampsAndNeverFires schedules delays at the int64
// limit, at the start and after 200 years of (fake) uptime, when the sum
// overflows: each deadline clamps to the largest instant instead of
// wrapping into the past (Netty #7760 fired those at once); Deadline()
// stays about 292 years after the start; none fires in 200 years; Stop
// returns them all. A delay of math.MinInt64 is due at once and fires on
// the next tick.
func TestClockMaxDelayClampsAndNeverFires(t *testing.T) {
	fake := clock.NewFake(time.Now())
	day := 24 * time.Hour
	h := newTimerOn(t, fake, WithExecutor(pool.Inline), WithTickDuration(day), WithTicksPerWheel(8))
	rec := &runRecorder{now: fake.Nanotime}
	var pending []Timeout
	schedule := func(delay time.Duration) Timeout {
		to := mustSchedule(t, h, rec, delay)
		fake.WaitAsleep()
		return to
	}
	endOfTime := startTime(h).Add(math.MaxInt64)
	require.True(t, endOfTime.Year() >= 2250 && endOfTime.After(time.Now().Add(290*365*day)), "start+MaxInt64 is %v", endOfTime)
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 100} {
		to := schedule(d)
		want := startTime(h).Add(time.Duration(modelDeadline(0, d)))
		require.True(t, to.Deadline().Equal(want), "delay %d: Deadline() %v, want %v", d, to.Deadline(), want)
		pending = append(pending, to)
	}
	past := schedule(math.MinInt64)
	require.True(t, past.Deadline().Equal(startTime(h).Add(deadlineUnit)),
		"delay MinInt64: Deadline() %v, want just after the call's time, the start %v", past.Deadline(), startTime(h))
	fake.Jump(day)
	fake.WaitAsleep()
	require.True(t, past.IsExpired() && len(rec.runs()) == 1, "delay MinInt64 did not fire on the next tick (runs %v)", rec.runs())

	const years = 200
	for y := 0; y < years; y++ {
		fake.Jump(365 * day)
		fake.WaitAsleep()
	}
	// Now the clock plus the delay overflows: both clamp to the limit.
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Duration(fake.Nanotime()) + 1} {
		to := schedule(d)
		require.True(t, to.Deadline().Equal(endOfTime),
			"delay %d after %d years: Deadline() %v, want the clamp %v", d, years, to.Deadline(), endOfTime)
		pending = append(pending, to)
	}
	fake.Jump(30 * day)
	fake.WaitAsleep()
	require.Len(t, rec.runs(), 1, "only the MinInt64 delay may have fired")
	require.Equal(t, int64(len(pending)), h.PendingTimeouts())
	require.Len(t, h.Stop(), len(pending), "Stop's result")
	for _, to := range pending {
		require.True(t, to.IsCancelled() && !to.IsExpired(), "%v: not cancelled by Stop", to)
	}
}

// TestClockHugeTickDoesNotBusyLoop makes a timer whose tick, accepted by
// New, is so long that the end of its first tick is past the int64 limit,
// and schedules one timeout: the worker must sleep, not spin.
func TestClockHugeTickDoesNotBusyLoop(t *testing.T) {
	for _, tick := range []time.Duration{math.MaxInt64 - 1, 1 << 62, math.MaxInt64/2 + 1} {
		t.Run(tick.String(), func(t *testing.T) {
			fake := newFakeAt(1) // a real clock reads about 1µs at the start
			h := newTimerOn(t, fake, WithExecutor(pool.Inline), WithTickDuration(tick), WithTicksPerWheel(1))
			settleWithin(t, fake, h, 2*time.Second)
			mustSchedule(t, h, noopTask, time.Hour)
			settleWithin(t, fake, h, 2*time.Second)
			fake.Jump(time.Hour)
			settleWithin(t, fake, h, 2*time.Second)
			require.Equal(t, int64(1), h.PendingTimeouts())
		})
	}
}

// clkGatedClock wraps a fake clock so that a worker woken from its idle
// sleep is held, before it reads the clock, until the test lets it go: a
// worker goroutine that the scheduler runs late.
type clkGatedClock struct {
	*clock.Fake
	holding atomic.Bool
	held    chan struct{} // receives when a worker is held
	release chan struct{}
}

func (c *clkGatedClock) Sleeper() (clockwork.Sleeper, error) {
	s, err := c.Fake.Sleeper()
	if err != nil {
		return nil, err
	}
	return &clkGatedSleeper{Sleeper: s, Watcher: s.(clockwork.Watcher), WorkTracker: s.(clockwork.WorkTracker), c: c}, nil
}

// clkGatedSleeper is the Fake's sleeper, whose Sleep it wraps.
type clkGatedSleeper struct {
	clockwork.Sleeper
	clockwork.Watcher
	clockwork.WorkTracker
	c *clkGatedClock
}

func (s *clkGatedSleeper) Sleep(until int64) {
	s.Sleeper.Sleep(until)
	if until == clockwork.Forever && s.c.holding.CompareAndSwap(true, false) {
		s.c.held <- struct{}{}
		<-s.c.release
	}
}

// TestClockWorkerWokenLateFiresOverdueTimeoutsAtOnce: an idle worker is
// woken by a NewTimeout with a 5ms deadline, but runs only after the clock
// has passed the end of the tick covering it (10ms). The timeout is
// overdue; it must fire as soon as the worker runs, at 10ms, as it would
// have had the worker not been idle, and not a whole tick later.
func TestClockWorkerWokenLateFiresOverdueTimeoutsAtOnce(t *testing.T) {
	c := &clkGatedClock{Fake: clock.NewFake(time.Now()), held: make(chan struct{}), release: make(chan struct{})}
	tick := 10 * time.Millisecond
	h := newTimerOn(t, c, WithExecutor(pool.Inline), WithTickDuration(tick))
	c.WaitAsleep()
	c.holding.Store(true)
	rec := &runRecorder{now: c.Nanotime}
	mustSchedule(t, h, rec, 5*time.Millisecond)
	<-c.held // the worker has been woken and is held before reading the clock
	c.Jump(tick)
	close(c.release)
	c.WaitAsleep()
	if runs := rec.runs(); len(runs) != 1 {
		c.Jump(tick) // to tell a late run from none in the message
		c.WaitAsleep()
		require.Fail(t, fmt.Sprintf("deadline 5ms, worker running at 10ms: runs %v by 10ms (%v by 20ms); want it to fire at 10ms",
			runs, rec.runs()))
	}
}
