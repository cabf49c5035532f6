package hashedwheel

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

// statsBalance fails the test unless the counters of a quiet timer add up:
// every accepted timeout is pending, expired, cancelled or returned by Stop.
func statsBalance(tb testing.TB, s Stats) {
	tb.Helper()
	require.GreaterOrEqual(tb, s.Pending, int64(0), "Pending: %+v", s)
	sum := uint64(s.Pending) + s.Expired + s.Cancelled + s.ReturnedByStop
	require.Equal(tb, sum, s.Scheduled, "Scheduled, want Pending+Expired+Cancelled+ReturnedByStop: %+v", s)
	require.GreaterOrEqual(tb, s.MaxTickLag, time.Duration(0), "MaxTickLag")
}

// statsWant compares the counters that a fake-clock test controls exactly.
func statsWant(tb testing.TB, got Stats, want Stats) {
	tb.Helper()
	// Ticks and the lags depend on how the test drives the clock; callers
	// check them separately.
	got.Ticks, got.MaxTickLag = 0, 0
	got.LatenessP50, got.LatenessP99, got.MaxLateness, got.MaxHandOffWait = 0, 0, 0, 0
	require.Equal(tb, want, got, "Stats()")
}

func TestStatsZeroBeforeStart(t *testing.T) {
	h, err := New()
	require.NoError(t, err)
	require.Zero(t, h.Stats(), "Stats() of a new timer")
	require.Nil(t, h.Stop(), "Stop() of an unstarted timer")
	require.Zero(t, h.Stats(), "Stats() after Stop of an unstarted timer")
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
		tos[i] = mustSchedule(t, h, task(i), d)
	}
	fake.WaitAsleep()
	statsWant(t, h.Stats(), Stats{Pending: 5, Scheduled: 5})
	require.Equal(t, int64(5), h.PendingTimeouts())

	// 1 is cancelled while still queued: counted by its Cancel, it is no
	// longer pending; the worker drops it on the next tick.
	require.True(t, tos[1].Cancel(), "Cancel of a pending timeout")
	require.False(t, tos[1].Cancel(), "second Cancel")
	statsWant(t, h.Stats(), Stats{Pending: 4, Scheduled: 5, Cancelled: 1})

	advance(fake, 20*time.Millisecond) // ticks 0 and 1: 1 dropped, 0 fires
	statsWant(t, h.Stats(), Stats{Pending: 3, Scheduled: 5, Expired: 1, Cancelled: 1})
	require.Equal(t, []int{0}, ran)
	statsBalance(t, h.Stats())

	// 3 is in a bucket now: counted at once, unlinked on the next tick.
	require.True(t, tos[3].Cancel(), "Cancel of a timeout in the wheel")
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 5, Expired: 1, Cancelled: 2})
	advance(fake, 20*time.Millisecond) // ticks 2 and 3: 3 unlinked, 2 fires
	statsWant(t, h.Stats(), Stats{Pending: 1, Scheduled: 5, Expired: 2, Cancelled: 2})
	statsBalance(t, h.Stats())

	// Cancelling an expired or cancelled timeout changes nothing.
	require.False(t, tos[0].Cancel(), "Cancel of an expired timeout")
	require.False(t, tos[3].Cancel(), "Cancel of a cancelled timeout")
	// One more, cancelled at once.
	late := mustSchedule(t, h, task(5), time.Hour)
	require.True(t, late.Cancel(), "Cancel of a new timeout")
	advance(fake, testTick)
	statsWant(t, h.Stats(), Stats{Pending: 1, Scheduled: 6, Expired: 2, Cancelled: 3})

	require.Equal(t, []Timeout{tos[4]}, h.Stop(), "Stop returns only timeout 4")
	statsWant(t, h.Stats(), Stats{Scheduled: 6, Expired: 2, Cancelled: 3, ReturnedByStop: 1})
	statsBalance(t, h.Stats())

	// Rejections after Stop are counted and schedule nothing; a nil task is
	// not a rejection of either kind.
	for range 3 {
		_, err := h.NewTimeout(noopTask, time.Millisecond)
		require.ErrorIs(t, err, ErrStopped, "NewTimeout after Stop")
	}
	_, err := h.AfterFunc(time.Millisecond, func() {})
	require.ErrorIs(t, err, ErrStopped, "AfterFunc after Stop")
	_, err = h.NewTimeout(nil, time.Millisecond)
	require.ErrorIs(t, err, ErrNilTask, "NewTimeout(nil)")
	statsWant(t, h.Stats(), Stats{Scheduled: 6, Expired: 2, Cancelled: 3, ReturnedByStop: 1,
		RejectedStopped: 4})
	require.Equal(t, []int{0, 2}, ran)
}

func TestStatsRejectedFull(t *testing.T) {
	h, fake := newFakeTimer(t, WithMaxPendingTimeouts(2))
	a := mustSchedule(t, h, noopTask, time.Hour)
	mustSchedule(t, h, noopTask, 15*time.Millisecond)
	for range 2 {
		_, err := h.NewTimeout(noopTask, time.Hour)
		require.ErrorIs(t, err, ErrTooManyPendingTimeouts, "third pending timeout")
	}
	fake.WaitAsleep()
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 2, RejectedFull: 2})

	// A cancelled timeout frees its place when Cancel returns.
	require.True(t, a.Cancel())
	b := mustSchedule(t, h, noopTask, time.Hour)
	_, err := h.NewTimeout(noopTask, time.Hour)
	require.ErrorIs(t, err, ErrTooManyPendingTimeouts, "the freed place is taken")
	advance(fake, 20*time.Millisecond) // the second expires
	statsWant(t, h.Stats(), Stats{Pending: 1, Scheduled: 3, Expired: 1, Cancelled: 1, RejectedFull: 3})
	require.True(t, b.Cancel())
	for range 2 {
		_, err := h.NewTimeout(noopTask, time.Hour)
		require.NoError(t, err, "after both left the pending set")
	}
	fake.WaitAsleep()
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 5, Expired: 1, Cancelled: 2, RejectedFull: 3})
	statsBalance(t, h.Stats())
}

// TestStatsTicksAndLag drives the fake clock past three tick ends at once:
// the worker runs the missed ticks back to back, 20ms, 10ms and 0ms late.
// A timeout is due in each of the first ten ticks, so that none is skipped.
func TestStatsTicksAndLag(t *testing.T) {
	h, fake := newFakeTimer(t)
	s := h.Stats()
	require.Zero(t, s.Ticks, "idle timer")
	require.Zero(t, s.MaxTickLag, "idle timer")
	for i := range 10 {
		mustSchedule(t, h, noopTask, time.Duration(i)*testTick)
	}
	fake.WaitAsleep()
	advance(fake, 5*testTick)
	s = h.Stats()
	require.Equal(t, uint64(5), s.Ticks, "after 5 punctual ticks")
	require.Zero(t, s.MaxTickLag, "after 5 punctual ticks")

	fake.Jump(3 * testTick)
	fake.WaitAsleep()
	s = h.Stats()
	require.Equal(t, uint64(8), s.Ticks, "after a jump of 3 ticks")
	require.Equal(t, 2*testTick, s.MaxTickLag, "after a jump of 3 ticks")

	// The worst lag is kept, not overwritten by a smaller one.
	fake.Jump(2 * testTick)
	fake.WaitAsleep()
	s = h.Stats()
	require.Equal(t, uint64(9), s.Ticks, "after a jump of 2 ticks: tick 8 alone has something due")
	require.Equal(t, 2*testTick, s.MaxTickLag, "after a jump of 2 ticks")
	statsBalance(t, s)
}

func TestStatsExecutorFailures(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(&refusingExecutor{}))
	ran := make(chan struct{}, 1)
	mustSchedule(t, h, TaskFunc(func(Timeout) { ran <- struct{}{} }), 5*time.Millisecond)
	fake.WaitAsleep()
	advance(fake, testTick)
	select {
	case <-ran: // a refused task still runs, on a goroutine of its own
	case <-time.After(10 * time.Second):
		require.Fail(t, "the refused task never ran")
	}
	statsWant(t, h.Stats(), Stats{Scheduled: 1, Expired: 1, ExecutorFailures: 1})
}

// TestStatsConcurrent runs producers and cancellers on a real clock while
// another goroutine polls Stats: every snapshot must be consistent, the
// totals must never go down, and the quiet timer must balance.
func TestStatsConcurrent(t *testing.T) {
	h, err := New(WithTickDuration(time.Millisecond))
	require.NoError(t, err)
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

	// The producers run on goroutines of their own: assert, not require.
	racetest.Run(producers, perProducer, func(p, i int) {
		if i%2 == 0 {
			if _, err := h.AfterFunc(time.Duration(i%20)*time.Millisecond, fired.Done); !assert.NoError(t, err, "producer %d", p) {
				fired.Done()
			}
			return
		}
		to, err := h.AfterFunc(time.Hour, func() { assert.Fail(t, "a cancelled timeout fired") })
		if !assert.NoError(t, err, "producer %d", p) {
			return
		}
		assert.True(t, to.Cancel(), "Cancel of a pending timeout")
	})()
	fired.Wait()

	// Wait for the worker to process the last cancellations.
	require.Eventually(t, func() bool { return h.Stats().Pending == 0 }, 10*time.Second, time.Millisecond,
		"still pending after 10s")
	close(stop)
	require.NoError(t, <-polled)

	const total = producers * perProducer
	s := h.Stats()
	statsBalance(t, s)
	require.Equal(t, [3]uint64{total, total / 2, total / 2}, [3]uint64{s.Scheduled, s.Expired, s.Cancelled},
		"Scheduled, Expired and Cancelled: %+v", s)
	require.NotZero(t, s.Ticks, "Ticks after timeouts fired")
	require.Zero(t, s.RejectedFull+s.RejectedStopped+s.ExecutorFailures, "unexpected rejections or failures: %+v", s)
	require.Empty(t, h.Stop(), "Stop returned timeouts")
	s = h.Stats()
	statsBalance(t, s)
	require.Zero(t, s.ReturnedByStop, "after Stop: %+v", s)
	require.Zero(t, s.Pending, "after Stop: %+v", s)
}

// TestStatsStopReturnsPending checks ReturnedByStop against Stop's result on
// a real clock, with timeouts both in the wheel and still queued.
func TestStatsStopReturnsPending(t *testing.T) {
	h, err := New(WithTickDuration(time.Millisecond))
	require.NoError(t, err)
	const n = 1000
	for range n {
		mustSchedule(t, h, noopTask, time.Hour)
	}
	got := h.Stop()
	s := h.Stats()
	require.Len(t, got, n, "Stop's result")
	require.True(t, s.ReturnedByStop == n && s.Scheduled == n && s.Pending == 0,
		"Stats() = %+v; want %d returned, scheduled and counted", s, n)
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
		to := mustSchedule(t, h, noopTask, time.Hour)
		require.True(t, to.Cancel(), "Cancel of a queued timeout")
		last = to
	}
	fake.WaitAsleep()
	s := h.Stats()
	statsBalance(t, s)
	assert.Equal(t, uint64(n), s.Scheduled)
	advance(fake, 10*time.Millisecond)
	statsWant(t, h.Stats(), Stats{Scheduled: n, Cancelled: n})
	statsBalance(t, h.Stats())
	require.Nil(t, last.(*timeout).below(), "the dropped timeout still links to another")
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
			// Not the test's goroutine: assert, not require.
			p := h.PendingTimeouts()
			s := h.Stats()
			if !assert.True(t, p >= 0 && p <= 1 && s.Pending >= 0 && s.Pending <= 1,
				"PendingTimeouts %d, Stats %v: outside [0, 1]", p, s) {
				return
			}
			if !assert.Equal(t, uint64(s.Pending)+s.Expired+s.Cancelled+s.ReturnedByStop, s.Scheduled,
				"unbalanced snapshot: %v", s) {
				return
			}
		}
	}()
	perProducer := 100_000
	if testing.Short() {
		perProducer = 10_000
	}
	racetest.Run(3, perProducer, func(p, i int) {
		to, err := h.NewTimeout(noopTask, 0)
		if err == nil && i%2 == 0 {
			to.Cancel()
		}
	})()
	close(stop)
	readers.Wait()
	assert.Positive(t, h.Stats().Scheduled)
}

// TestStatsScheduledCountsContexts: Scheduled counts a context of
// WithTimeout or WithDeadline that a timeout of the wheel keeps, as it
// counts NewTimeout's; not one done at once, one whose parent's deadline
// comes first, nor a fallback, which RejectedFull or RejectedStopped and
// ContextFallbacks count.
func TestStatsScheduledCountsContexts(t *testing.T) {
	h, fake := newFakeTimer(t, WithMaxPendingTimeouts(2))
	bg := context.Background()
	ctx1, cancel1 := h.WithTimeout(bg, time.Hour)
	defer cancel1()
	_, cancel2 := h.WithDeadline(bg, fake.Now().Add(time.Hour))
	defer cancel2()
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 2})

	_, cancelDone := h.WithTimeout(bg, -time.Second) // done at once
	cancelDone()
	_, cancelChild := h.WithTimeout(ctx1, 2*time.Hour) // ctx1's deadline comes first
	cancelChild()
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 2})

	_, cancelFull := h.WithTimeout(bg, time.Hour) // at the limit: a fallback
	cancelFull()
	_, err := h.AfterFunc(time.Hour, func() {})
	require.ErrorIs(t, err, ErrTooManyPendingTimeouts)
	statsWant(t, h.Stats(), Stats{Pending: 2, Scheduled: 2, RejectedFull: 2, ContextFallbacks: 1})

	require.Empty(t, h.Stop(), "Stop returns no context's timeout")
	_, cancelStopped := h.WithTimeout(bg, time.Hour)
	cancelStopped()
	_, err = h.Every(time.Hour, func() {})
	require.ErrorIs(t, err, ErrStopped)
	statsWant(t, h.Stats(), Stats{Scheduled: 2, Cancelled: 2, RejectedFull: 2, RejectedStopped: 2, ContextFallbacks: 4})
}
