package hashedwheel

import (
	"errors"
	"fmt"
	"github.com/stretchr/testify/assert"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
	"github.com/wheeltimer/wheeltimer/pool"
)

// statsBalance fails the test unless the counters of a quiet timer add up:
// every accepted timeout is pending, expired, cancelled or returned by Stop.
func statsBalance(tb testing.TB, s Stats) {
	tb.Helper()
	if s.Pending < 0 {
		tb.Fatalf("Pending = %d < 0: %+v", s.Pending, s)
	}
	sum := uint64(s.Pending) + s.Expired + s.Cancelled + s.ReturnedByStop
	if s.Scheduled != sum {
		tb.Fatalf("Scheduled = %d, want Pending+Expired+Cancelled+ReturnedByStop = %d: %+v",
			s.Scheduled, sum, s)
	}
	if s.MaxTickLag < 0 {
		tb.Fatalf("MaxTickLag = %v < 0", s.MaxTickLag)
	}
}

// statsWant compares the counters that a fake-clock test controls exactly.
func statsWant(tb testing.TB, got Stats, want Stats) {
	tb.Helper()
	// Ticks and MaxTickLag depend on how the test drives the clock; callers
	// check them separately.
	got.Ticks, got.MaxTickLag = 0, 0
	if got != want {
		tb.Fatalf("Stats() =\n\t%+v\nwant\n\t%+v", got, want)
	}
}

func statsNop(Timeout) {}

func TestStatsZeroBeforeStart(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Stats(); got != (Stats{}) {
		t.Fatalf("Stats() of a new timer = %+v, want zero", got)
	}
	if got := h.Stop(); got != nil {
		t.Fatalf("Stop() of an unstarted timer = %v, want nil", got)
	}
	if got := h.Stats(); got != (Stats{}) {
		t.Fatalf("Stats() after Stop of an unstarted timer = %+v, want zero", got)
	}
}

// TestStatsLifecycle walks one timer through scheduling, cancelling (both
// before and after the worker moved the timeout into the wheel), expiring,
// stopping and rejecting, checking the exact counters at each step.
func TestStatsLifecycle(t *testing.T) {
	h, fake := newFakeTimer(t)
	var ran []int
	task := func(i int) TaskFunc { return func(Timeout) { ran = append(ran, i) } }

	// 0 and 1 are due at 15ms, 2 at 35ms, 3 and 4 far in the future.
	delays := []time.Duration{15 * time.Millisecond, 15 * time.Millisecond,
		35 * time.Millisecond, time.Hour, 2 * time.Hour}
	tos := make([]Timeout, len(delays))
	for i, d := range delays {
		to, err := h.NewTimeout(task(i), d)
		if err != nil {
			t.Fatal(err)
		}
		tos[i] = to
	}
	fake.Settle()
	statsWant(t, h.Stats(), Stats{Pending: 5, Scheduled: 5})
	if got := h.PendingTimeouts(); got != 5 {
		t.Fatalf("PendingTimeouts() = %d, want 5", got)
	}

	// 1 is cancelled while still queued: the worker counts it when it drops
	// it, on the next tick. Until then Pending keeps it, as PendingTimeouts
	// does.
	if !tos[1].Cancel() {
		t.Fatal("Cancel of a pending timeout returned false")
	}
	if tos[1].Cancel() {
		t.Fatal("second Cancel returned true")
	}
	statsWant(t, h.Stats(), Stats{Pending: 5, Scheduled: 5})

	advance(fake, 20*time.Millisecond) // ticks 0 and 1: 1 dropped, 0 fires
	statsWant(t, h.Stats(), Stats{Pending: 3, Scheduled: 5, Expired: 1, Cancelled: 1})
	if len(ran) != 1 || ran[0] != 0 {
		t.Fatalf("ran %v, want [0]", ran)
	}
	statsBalance(t, h.Stats())

	// 3 is in a bucket now: its cancellation is processed on the next tick.
	if !tos[3].Cancel() {
		t.Fatal("Cancel of a timeout in the wheel returned false")
	}
	statsWant(t, h.Stats(), Stats{Pending: 3, Scheduled: 5, Expired: 1, Cancelled: 1})
	advance(fake, 20*time.Millisecond) // ticks 2 and 3: 3 unlinked, 2 fires
	statsWant(t, h.Stats(), Stats{Pending: 1, Scheduled: 5, Expired: 2, Cancelled: 2})
	statsBalance(t, h.Stats())

	// Cancelling an expired or cancelled timeout changes nothing.
	if tos[0].Cancel() || tos[3].Cancel() {
		t.Fatal("Cancel of an expired or cancelled timeout returned true")
	}
	// One more, cancelled at once.
	late, err := h.NewTimeout(task(5), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !late.Cancel() {
		t.Fatal("Cancel of a new timeout returned false")
	}
	advance(fake, testTick)
	statsWant(t, h.Stats(), Stats{Pending: 1, Scheduled: 6, Expired: 2, Cancelled: 3})

	stopped := h.Stop()
	if len(stopped) != 1 || stopped[0] != tos[4] {
		t.Fatalf("Stop returned %v, want only timeout 4", stopped)
	}
	statsWant(t, h.Stats(), Stats{Scheduled: 6, Expired: 2, Cancelled: 3, ReturnedByStop: 1})
	statsBalance(t, h.Stats())

	// Rejections after Stop are counted and schedule nothing; a nil task is
	// not a rejection of either kind.
	for range 3 {
		if _, err := h.NewTimeout(TaskFunc(statsNop), time.Millisecond); !errors.Is(err, ErrStopped) {
			t.Fatalf("NewTimeout after Stop: err = %v, want ErrStopped", err)
		}
	}
	if _, err := h.AfterFunc(time.Millisecond, func() {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("AfterFunc after Stop: err = %v, want ErrStopped", err)
	}
	if _, err := h.NewTimeout(nil, time.Millisecond); !errors.Is(err, ErrNilTask) {
		t.Fatalf("NewTimeout(nil): err = %v, want ErrNilTask", err)
	}
	statsWant(t, h.Stats(), Stats{Scheduled: 6, Expired: 2, Cancelled: 3, ReturnedByStop: 1,
		RejectedStopped: 4})
	if len(ran) != 2 || ran[1] != 2 {
		t.Fatalf("ran %v, want [0 2]", ran)
	}
}

func TestStatsRejectedFull(t *testing.T) {
	h, fake := newFakeTimer(t, WithMaxPendingTimeouts(2))
	a, err := h.NewTimeout(TaskFunc(statsNop), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.NewTimeout(TaskFunc(statsNop), 15*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.NewTimeout(TaskFunc(statsNop), time.Hour); !errors.Is(err, ErrTooManyPendingTimeouts) {
			t.Fatalf("third pending timeout: err = %v, want ErrTooManyPendingTimeouts", err)
		}
	}
	fake.Settle()
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 2, RejectedFull: 2})

	// A cancelled timeout keeps its place until the worker processes it.
	a.Cancel()
	if _, err := h.NewTimeout(TaskFunc(statsNop), time.Hour); !errors.Is(err, ErrTooManyPendingTimeouts) {
		t.Fatalf("before the cancellation is processed: err = %v, want ErrTooManyPendingTimeouts", err)
	}
	advance(fake, 20*time.Millisecond) // processes the cancel; the second expires
	statsWant(t, h.Stats(), Stats{Scheduled: 2, Expired: 1, Cancelled: 1, RejectedFull: 3})
	for range 2 {
		if _, err := h.NewTimeout(TaskFunc(statsNop), time.Hour); err != nil {
			t.Fatalf("after both left the pending set: %v", err)
		}
	}
	fake.Settle()
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 4, Expired: 1, Cancelled: 1, RejectedFull: 3})
	statsBalance(t, h.Stats())
}

// TestStatsTicksAndLag drives the fake clock past three tick ends at once:
// the worker runs the missed ticks back to back, 20ms, 10ms and 0ms late.
// A timeout is due in each of the first ten ticks, so that none is skipped.
func TestStatsTicksAndLag(t *testing.T) {
	h, fake := newFakeTimer(t)
	if s := h.Stats(); s.Ticks != 0 || s.MaxTickLag != 0 {
		t.Fatalf("idle timer: Ticks = %d, MaxTickLag = %v, want 0, 0", s.Ticks, s.MaxTickLag)
	}
	for i := range 10 {
		if _, err := h.NewTimeout(TaskFunc(statsNop), time.Duration(i)*testTick); err != nil {
			t.Fatal(err)
		}
	}
	fake.Settle()
	advance(fake, 5*testTick)
	s := h.Stats()
	if s.Ticks != 5 || s.MaxTickLag != 0 {
		t.Fatalf("after 5 punctual ticks: Ticks = %d, MaxTickLag = %v, want 5, 0", s.Ticks, s.MaxTickLag)
	}

	fake.Advance(3 * testTick)
	fake.Settle()
	s = h.Stats()
	if s.Ticks != 8 || s.MaxTickLag != 2*testTick {
		t.Fatalf("after a jump of 3 ticks: Ticks = %d, MaxTickLag = %v, want 8, %v", s.Ticks, s.MaxTickLag, 2*testTick)
	}

	// The worst lag is kept, not overwritten by a smaller one.
	fake.Advance(2 * testTick)
	fake.Settle()
	s = h.Stats()
	if s.Ticks != 10 || s.MaxTickLag != 2*testTick {
		t.Fatalf("after a jump of 2 ticks: Ticks = %d, MaxTickLag = %v, want 10, %v", s.Ticks, s.MaxTickLag, 2*testTick)
	}
	statsBalance(t, s)
}

// statsRefusing is an executor that refuses every task.
type statsRefusing struct{}

func (statsRefusing) Execute(func()) error { return pool.ErrClosed }

func TestStatsExecutorFailures(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(statsRefusing{}), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ran := make(chan struct{}, 1)
	if _, err := h.NewTimeout(TaskFunc(func(Timeout) { ran <- struct{}{} }), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	fake.Settle()
	advance(fake, testTick)
	select {
	case <-ran: // a refused task still runs, on a goroutine of its own
	case <-time.After(10 * time.Second):
		t.Fatal("the refused task never ran")
	}
	statsWant(t, h.Stats(), Stats{Scheduled: 1, Expired: 1, ExecutorFailures: 1})
}

// TestStatsConcurrent runs producers and cancellers on a real clock while
// another goroutine polls Stats: every snapshot must be consistent, the
// totals must never go down, and the quiet timer must balance.
func TestStatsConcurrent(t *testing.T) {
	h, err := New(WithTickDuration(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()

	const producers, perProducer = 4, 500
	var fired sync.WaitGroup
	fired.Add(producers * perProducer / 2) // the odd ones are cancelled

	stop := make(chan struct{})
	polled := make(chan error, 1)
	go func() {
		var prev Stats
		for {
			s := h.Stats()
			switch {
			case s.Pending < 0:
				polled <- fmt.Errorf("Pending = %d < 0", s.Pending)
				return
			case s.Scheduled < s.Expired+s.Cancelled+s.ReturnedByStop:
				polled <- fmt.Errorf("Scheduled %d < processed %d", s.Scheduled, s.Expired+s.Cancelled+s.ReturnedByStop)
				return
			case s.Scheduled < prev.Scheduled || s.Expired < prev.Expired ||
				s.Cancelled < prev.Cancelled || s.Ticks < prev.Ticks || s.MaxTickLag < prev.MaxTickLag:
				polled <- fmt.Errorf("a total went down: %+v then %+v", prev, s)
				return
			}
			prev = s
			select {
			case <-stop:
				polled <- nil
				return
			default:
				runtime.Gosched()
			}
		}
	}()

	racetest.Run(producers, perProducer, func(p, i int) {
		if i%2 == 0 {
			if _, err := h.AfterFunc(time.Duration(i%20)*time.Millisecond, fired.Done); err != nil {
				t.Errorf("producer %d: %v", p, err)
				fired.Done()
			}
			return
		}
		to, err := h.AfterFunc(time.Hour, func() { t.Error("a cancelled timeout fired") })
		if err != nil {
			t.Errorf("producer %d: %v", p, err)
			return
		}
		if !to.Cancel() {
			t.Error("Cancel of a pending timeout returned false")
		}
	})()
	fired.Wait()

	// Wait for the worker to process the last cancellations.
	deadline := time.Now().Add(10 * time.Second)
	for h.Stats().Pending != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still pending after 10s: %+v", h.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	if err := <-polled; err != nil {
		t.Fatal(err)
	}

	const total = producers * perProducer
	s := h.Stats()
	statsBalance(t, s)
	if s.Scheduled != total || s.Expired != total/2 || s.Cancelled != total/2 {
		t.Fatalf("Stats() = %+v, want Scheduled %d, Expired %d, Cancelled %d", s, total, total/2, total/2)
	}
	if s.Ticks == 0 {
		t.Fatal("Ticks = 0 after timeouts fired")
	}
	if s.RejectedFull != 0 || s.RejectedStopped != 0 || s.ExecutorFailures != 0 {
		t.Fatalf("unexpected rejections or failures: %+v", s)
	}
	if got := h.Stop(); len(got) != 0 {
		t.Fatalf("Stop returned %d timeouts, want 0", len(got))
	}
	s = h.Stats()
	statsBalance(t, s)
	if s.ReturnedByStop != 0 || s.Pending != 0 {
		t.Fatalf("after Stop: %+v", s)
	}
}

// TestStatsStopReturnsPending checks ReturnedByStop against Stop's result on
// a real clock, with timeouts both in the wheel and still queued.
func TestStatsStopReturnsPending(t *testing.T) {
	h, err := New(WithTickDuration(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for range n {
		if _, err := h.NewTimeout(TaskFunc(statsNop), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	got := h.Stop()
	s := h.Stats()
	if len(got) != n || s.ReturnedByStop != n || s.Scheduled != n || s.Pending != 0 {
		t.Fatalf("Stop returned %d; Stats() = %+v; want %d returned, scheduled and counted", len(got), s, n)
	}
	statsBalance(t, s)
}

// TestStatsCountTimeoutsUnlinkedByPushes: timeouts made and cancelled one
// after another mostly never reach the worker, each push unlinking the one
// before it, yet they are counted as they would be had the worker dropped
// them: scheduled at once, cancelled by the next tick. A timeout the
// worker drops keeps no link to those made before it.
func TestStatsCountTimeoutsUnlinkedByPushes(t *testing.T) {
	h, fake := newFakeTimer(t)
	const n = 100
	var last Timeout
	for i := 0; i < n; i++ {
		to, err := h.NewTimeout(noopTask, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !to.Cancel() {
			t.Fatal("Cancel of a queued timeout returned false")
		}
		last = to
	}
	fake.Settle()
	s := h.Stats()
	statsBalance(t, s)
	assert.Equal(t, uint64(n), s.Scheduled)
	advance(fake, 10*time.Millisecond)
	statsWant(t, h.Stats(), Stats{Scheduled: n, Cancelled: n})
	statsBalance(t, h.Stats())
	if below := last.(*timeout).below(); below != nil {
		t.Fatalf("the dropped timeout still links to %v", below)
	}
}

// TestPendingNeverExceedsTheLimit: with a limit of 1 and three goroutines
// scheduling zero-delay timeouts and cancelling half of them, on a real
// clock, PendingTimeouts and Stats().Pending stay within [0, 1] and every
// Stats snapshot balances, read while the worker counts.
func TestPendingNeverExceedsTheLimit(t *testing.T) {
	h := startTimer(t, WithTickDuration(time.Millisecond), WithMaxPendingTimeouts(1))
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			p := h.PendingTimeouts()
			s := h.Stats()
			if p < 0 || p > 1 || s.Pending < 0 || s.Pending > 1 {
				t.Errorf("PendingTimeouts %d, Stats %v: outside [0, 1]", p, s)
				return
			}
			if s.Scheduled != uint64(s.Pending)+s.Expired+s.Cancelled+s.ReturnedByStop {
				t.Errorf("unbalanced snapshot: %v", s)
				return
			}
		}
	}()
	racetest.Run(3, 100_000, func(p, i int) {
		to, err := h.NewTimeout(noopTask, 0)
		if err == nil && i%2 == 0 {
			to.Cancel()
		}
	})()
	close(stop)
	readers.Wait()
	assert.Positive(t, h.Stats().Scheduled)
}
