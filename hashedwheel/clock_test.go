package hashedwheel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clock"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Time, for the timer, is the monotonic clock.Clock it is given and
// nothing else. The worker reads no wall clock, so a step of the wall
// clock (NTP, an administrator, a VM resuming) cannot move a deadline:
// TestClockWorkerReadsOnlyTheInjectedClock proves from the source that the
// only wall-clock reading is Start's startTime, used by Deadline() alone,
// and TestClockNothingMovesWithoutTheInjectedClock proves it at run time
// with a frozen fake clock. Forward jumps of the monotonic clock itself
// (a suspended machine resuming) make due timeouts fire late, never early.

// clkNewTimer returns a started timer on the clock c, with
// tasks run inline, stopped when the test ends.
func clkNewTimer(tb testing.TB, c clock.Clock, opts ...Option) *HashedWheelTimer {
	tb.Helper()
	return startTimer(tb, append([]Option{WithExecutor(pool.Inline), WithLogger(modelDiscardLogger()), withClock(c)}, opts...)...)
}

// clkRecorder counts the runs of a task and the fake clock at each.
type clkRecorder struct {
	fake *clock.Fake
	mu   sync.Mutex
	at   []int64
}

func (r *clkRecorder) Run(Timeout) {
	r.mu.Lock()
	r.at = append(r.at, r.fake.Now())
	r.mu.Unlock()
}

func (r *clkRecorder) runs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.at...)
}

// TestClockNothingMovesWithoutTheInjectedClock lets real time pass while
// the fake clock stands still: no tick is processed and nothing fires, so
// the worker takes time from the injected clock alone. Then the fake clock
// alone fires the timeout, at the end of the tick that covers its deadline.
func TestClockNothingMovesWithoutTheInjectedClock(t *testing.T) {
	fake := clock.NewFake(5 * time.Second)
	h := clkNewTimer(t, fake, WithTickDuration(time.Millisecond))
	rec := &clkRecorder{fake: fake}
	start := fake.Now()
	if _, err := h.NewTimeout(rec, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	fake.Settle()
	// Real time is the subject here: 50 ticks' worth of it pass.
	time.Sleep(50 * time.Millisecond)
	fake.Settle()
	if s := h.Stats(); s.Ticks != 0 || len(rec.runs()) != 0 || s.Pending != 1 {
		t.Fatalf("after 50ms of real time and none of the fake clock: %d ticks, %d runs, pending %d", s.Ticks, len(rec.runs()), s.Pending)
	}
	if got := fake.SleepingUntil(); got != start+int64(time.Millisecond) {
		t.Fatalf("the worker sleeps until %d, want the end of tick 0 on the fake clock, %d", got, start+int64(time.Millisecond))
	}
	// The deadline, 1ms, is the end of tick 0, so it is covered by tick 1.
	fake.Advance(time.Millisecond)
	fake.Settle()
	if n := len(rec.runs()); n != 0 {
		t.Fatalf("fired at 1ms, on its deadline but before the end of the tick covering it")
	}
	fake.Advance(time.Millisecond)
	fake.Settle()
	if runs := rec.runs(); len(runs) != 1 || runs[0] != start+int64(2*time.Millisecond) {
		t.Fatalf("runs at %v, want one at start+2ms", runs)
	}
	if s := h.Stats(); s.Ticks != 1 {
		t.Fatalf("%d ticks processed, want 1: tick 0 held nothing due", s.Ticks)
	}
}

// TestClockWorkerReadsOnlyTheInjectedClock checks the source of the
// package: no non-test file calls a wall-clock or runtime-timer function of
// package time, except Start, which reads time.Now once for startTime, and
// context.go, whose API speaks in time.Time deadlines that it turns into
// delays; and startTime is read only by Deadline. So no firing decision can
// depend on the wall clock.
func TestClockWorkerReadsOnlyTheInjectedClock(t *testing.T) {
	forbidden := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var calls, startTimeUses []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "context.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
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
				if sel.Sel.Name == "startTime" {
					startTimeUses = append(startTimeUses, where)
				}
				return true
			})
		}
	}
	sort.Strings(calls)
	if got, want := strings.Join(calls, ", "), "Start: time.Now"; got != want {
		t.Errorf("wall-clock and runtime-timer calls in the package: %q, want only %q", got, want)
	}
	sort.Strings(startTimeUses)
	if got, want := strings.Join(startTimeUses, ", "), "Deadline, Start"; got != want {
		t.Errorf("functions using startTime: %q, want only %q", got, want)
	}
}

// TestClockForwardJumpFiresDueTimeoutsOnly jumps the monotonic clock ten
// minutes ahead at once, as a machine resuming from suspend would: the
// worker processes, back to back, each tick it missed that has something
// due, and skips the others; each due timeout fires once, late and never
// early; the others stay pending.
func TestClockForwardJumpFiresDueTimeoutsOnly(t *testing.T) {
	fake := clock.NewFake(0)
	tick := 10 * time.Millisecond
	h := clkNewTimer(t, fake, WithTickDuration(tick), WithTicksPerWheel(64))
	delays := []time.Duration{0, time.Millisecond, time.Second, time.Minute, 10*time.Minute - tick - 1,
		10*time.Minute - tick, 10 * time.Minute, time.Hour}
	recs := make([]*clkRecorder, len(delays))
	for i, d := range delays {
		recs[i] = &clkRecorder{fake: fake}
		if _, err := h.NewTimeout(recs[i], d); err != nil {
			t.Fatal(err)
		}
	}
	fake.Settle()
	fake.Advance(10 * time.Minute)
	fake.Settle()
	for i, d := range delays {
		// Due if the tick covering it ended by 10 minutes.
		due := (int64(d)/int64(tick)+1)*int64(tick) <= int64(10*time.Minute)
		runs := recs[i].runs()
		switch {
		case due && (len(runs) != 1 || runs[0] != int64(10*time.Minute)):
			t.Errorf("delay %v: runs %v, want one at the jump's end", d, runs)
		case !due && len(runs) != 0:
			t.Errorf("delay %v: ran at %v, before its deadline", d, runs)
		}
	}
	s := h.Stats()
	dueTicks := map[int64]bool{}
	for _, d := range delays {
		if tk := modelDeadline(0, d) / int64(tick); (tk+1)*int64(tick) <= int64(10*time.Minute) {
			dueTicks[tk] = true
		}
	}
	if want := uint64(len(dueTicks)); s.Ticks != want {
		t.Errorf("%d ticks processed, want the %d missed ticks with something due", s.Ticks, want)
	}
	if s.MaxTickLag < 10*time.Minute-2*tick {
		t.Errorf("MaxTickLag %v after a 10-minute jump", s.MaxTickLag)
	}
	if s.Pending != 2 || s.Expired != uint64(len(delays)-2) {
		t.Errorf("pending %d, expired %d; want 2 and %d", s.Pending, s.Expired, len(delays)-2)
	}
}

// TestClockIdleWorkerSkipsTimeInsteadOfReplayingIt lets an hour pass on an
// idle timer: the next timeout counts its delay from the new time, and the
// worker does not replay the hour's ticks.
func TestClockIdleWorkerSkipsTimeInsteadOfReplayingIt(t *testing.T) {
	fake := clock.NewFake(0)
	tick := 10 * time.Millisecond
	h := clkNewTimer(t, fake, WithTickDuration(tick))
	fake.Settle()
	fake.Advance(time.Hour + 3*time.Millisecond)
	fake.Settle()
	rec := &clkRecorder{fake: fake}
	if _, err := h.NewTimeout(rec, 25*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	fake.Settle()
	// Deadline 1h+28ms: covered by the tick ending at 1h+30ms.
	for _, step := range []time.Duration{7 * time.Millisecond, 10 * time.Millisecond} {
		fake.Advance(step)
		fake.Settle()
		if n := len(rec.runs()); n != 0 {
			t.Fatalf("fired at %v, before its deadline 1h0m0.028s", time.Duration(fake.Now()))
		}
	}
	fake.Advance(tick)
	fake.Settle()
	if runs := rec.runs(); len(runs) != 1 || runs[0] != int64(time.Hour+30*time.Millisecond) {
		t.Fatalf("runs at %v, want one at 1h0m0.03s", runs)
	}
	if s := h.Stats(); s.Ticks > 4 {
		t.Fatalf("%d ticks processed: the idle hour was replayed", s.Ticks)
	}
}

// TestClockMaxDelayClampsAndNeverFires schedules delays at the int64
// limit, at the start and after 200 years of (fake) uptime, when the sum
// overflows: each deadline clamps to the largest instant instead of
// wrapping into the past (Netty #7760 fired those at once); Deadline()
// stays about 292 years after the start; none fires in 200 years; Stop
// returns them all. A delay of math.MinInt64 is due at once and fires on
// the next tick.
func TestClockMaxDelayClampsAndNeverFires(t *testing.T) {
	fake := clock.NewFake(0)
	day := 24 * time.Hour
	h := clkNewTimer(t, fake, WithTickDuration(day), WithTicksPerWheel(8))
	rec := &clkRecorder{fake: fake}
	var pending []Timeout
	schedule := func(delay time.Duration) Timeout {
		to, err := h.NewTimeout(rec, delay)
		if err != nil {
			t.Fatal(err)
		}
		fake.Settle()
		return to
	}
	endOfTime := h.startTime.Add(math.MaxInt64)
	if endOfTime.Year() < 2250 || !endOfTime.After(time.Now().Add(290*365*day)) {
		t.Fatalf("start+MaxInt64 is %v", endOfTime)
	}
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 100} {
		to := schedule(d)
		if want := h.startTime.Add(time.Duration(modelDeadline(0, d))); !to.Deadline().Equal(want) {
			t.Fatalf("delay %d: Deadline() %v, want %v", d, to.Deadline(), want)
		}
		pending = append(pending, to)
	}
	past := schedule(math.MinInt64)
	if !past.Deadline().Equal(h.startTime) {
		t.Fatalf("delay MinInt64: Deadline() %v, want the call's time, the start %v", past.Deadline(), h.startTime)
	}
	fake.Advance(day)
	fake.Settle()
	if !past.IsExpired() || len(rec.runs()) != 1 {
		t.Fatalf("delay MinInt64 did not fire on the next tick (runs %v)", rec.runs())
	}

	const years = 200
	for y := 0; y < years; y++ {
		fake.Advance(365 * day)
		fake.Settle()
	}
	// Now the clock plus the delay overflows: both clamp to the limit.
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Duration(fake.Now()) + 1} {
		to := schedule(d)
		if !to.Deadline().Equal(endOfTime) {
			t.Fatalf("delay %d after %d years: Deadline() %v, want the clamp %v", d, years, to.Deadline(), endOfTime)
		}
		pending = append(pending, to)
	}
	fake.Advance(30 * day)
	fake.Settle()
	if runs := rec.runs(); len(runs) != 1 {
		t.Fatalf("%d runs; only the MinInt64 delay may have fired", len(runs))
	}
	if p := h.PendingTimeouts(); p != int64(len(pending)) {
		t.Fatalf("PendingTimeouts %d, want %d", p, len(pending))
	}
	res := h.Stop()
	if len(res) != len(pending) {
		t.Fatalf("Stop returned %d timeouts, want %d", len(res), len(pending))
	}
	for _, to := range pending {
		if !to.IsCancelled() || to.IsExpired() {
			t.Fatalf("%v: not cancelled by Stop", to)
		}
	}
}

// TestClockHugeTickDoesNotBusyLoop makes a timer whose tick, accepted by
// New, is so long that the end of its first tick is past the int64 limit,
// and schedules one timeout: the worker must sleep, not spin.
func TestClockHugeTickDoesNotBusyLoop(t *testing.T) {
	for _, tick := range []time.Duration{math.MaxInt64 - 1, 1 << 62, math.MaxInt64/2 + 1} {
		t.Run(tick.String(), func(t *testing.T) {
			fake := clock.NewFake(1) // a real clock reads about 1µs at the start
			h := clkNewTimer(t, fake, WithTickDuration(tick), WithTicksPerWheel(1))
			settleWithin(t, fake, h, 2*time.Second)
			if _, err := h.NewTimeout(TaskFunc(func(Timeout) {}), time.Hour); err != nil {
				t.Fatal(err)
			}
			settleWithin(t, fake, h, 2*time.Second)
			fake.Advance(time.Hour)
			settleWithin(t, fake, h, 2*time.Second)
			if p := h.PendingTimeouts(); p != 1 {
				t.Fatalf("pending %d", p)
			}
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

func (c *clkGatedClock) NewSleeper() clock.Sleeper {
	return &clkGatedSleeper{Sleeper: c.Fake.NewSleeper(), c: c}
}

type clkGatedSleeper struct {
	clock.Sleeper
	c *clkGatedClock
}

func (s *clkGatedSleeper) Sleep(until int64) {
	s.Sleeper.Sleep(until)
	if until == clock.Forever && s.c.holding.CompareAndSwap(true, false) {
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
	c := &clkGatedClock{Fake: clock.NewFake(0), held: make(chan struct{}), release: make(chan struct{})}
	tick := 10 * time.Millisecond
	h := clkNewTimer(t, c, WithTickDuration(tick))
	c.Settle()
	c.holding.Store(true)
	rec := &clkRecorder{fake: c.Fake}
	if _, err := h.NewTimeout(rec, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	<-c.held // the worker has been woken and is held before reading the clock
	c.Advance(tick)
	close(c.release)
	c.Settle()
	if runs := rec.runs(); len(runs) != 1 {
		c.Advance(tick)
		c.Settle()
		t.Fatalf("deadline 5ms, worker running at 10ms: runs %v by 10ms (%v by 20ms); want it to fire at 10ms",
			runs, rec.runs())
	}
}
