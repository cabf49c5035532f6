package hashedwheel

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

func TestResetLaterNeverFiresAtTheOldDeadline(t *testing.T) {
	h, fake := newFakeTimer(t)
	rec := &runRecorder{now: fake.Nanotime}
	to := mustSchedule(t, h, rec, 3*testTick)
	advance(fake, testTick)
	require.True(t, to.Reset(10*testTick))
	assert.Equal(t, startTime(h).Add(11*testTick), to.Deadline(), "Deadline reports the new deadline")
	advance(fake, 10*testTick-1)
	assert.Empty(t, rec.runs(), "not before the new deadline, 11 ticks in")
	advance(fake, 1)
	assert.Equal(t, []int64{int64(11 * testTick)}, rec.runs(), "once, at its deadline, the end of the tick covering it")
	assert.True(t, to.IsExpired())
	assert.False(t, to.Reset(testTick), "expired: nothing to move")
	assert.Equal(t, uint64(1), h.Stats().Resets)
}

// TestResetEarlierFiresByTheNewDeadline: a timeout an hour away, moved to
// two ticks from now, fires then, whether the worker was ticking or asleep
// until the hour.
func TestResetEarlierFiresByTheNewDeadline(t *testing.T) {
	for _, asleep := range []bool{false, true} {
		h, fake := newFakeTimer(t)
		rec := &runRecorder{now: fake.Nanotime}
		to := mustSchedule(t, h, rec, time.Hour)
		if asleep {
			advance(fake, lingerTime+2*testTick)
			require.Greater(t, sleepingUntil(h), int64(time.Minute), "the worker sleeps until the hour")
		} else {
			fake.WaitAsleep()
		}
		start := fake.Nanotime()
		require.True(t, to.Reset(2*testTick))
		fake.WaitAsleep()
		require.LessOrEqual(t, sleepingUntil(h), start+int64(3*testTick), "asleep %v: woken for the new deadline", asleep)
		advance(fake, 3*testTick)
		assert.Len(t, rec.runs(), 1, "asleep %v", asleep)
		assert.GreaterOrEqual(t, rec.runs()[0], start+int64(2*testTick), "never before the new deadline")
	}
}

func TestResetOfAQueuedTimeoutTakesEffect(t *testing.T) {
	h, fake := newFakeTimer(t)
	rec := &runRecorder{now: fake.Nanotime}
	// Reset before the worker has taken the timeout in: it is filed by the
	// new deadline.
	to := mustSchedule(t, h, rec, time.Hour)
	require.True(t, to.Reset(testTick))
	advance(fake, 2*testTick)
	assert.Len(t, rec.runs(), 1)
}

func TestResetFailsOnceCancelledOrStopped(t *testing.T) {
	h, fake := newFakeTimer(t)
	cancelled := mustSchedule(t, h, noopTask, time.Hour)
	require.True(t, cancelled.Cancel())
	assert.False(t, cancelled.Reset(time.Minute))
	assert.True(t, cancelled.IsCancelled())
	stopped := mustSchedule(t, h, noopTask, time.Hour)
	fake.WaitAsleep()
	h.Stop()
	assert.False(t, stopped.Reset(time.Minute))
	assert.Zero(t, h.Stats().Resets)
}

// TestResetLaterAllocatesNothing: the heartbeat pattern, pushing a pending
// deadline later, allocates nothing and takes no place under the limit.
func TestResetLaterAllocatesNothing(t *testing.T) {
	h, fake := newFakeTimer(t, WithMaxPendingTimeouts(1))
	to := mustSchedule(t, h, noopTask, time.Hour)
	fake.WaitAsleep()
	d := time.Hour
	failed := 0 // counted, not asserted, inside the measured function
	allocs := testing.AllocsPerRun(1000, func() {
		d += time.Millisecond
		if !to.Reset(d) {
			failed++
		}
	})
	require.Zero(t, failed, "Resets that failed")
	assert.Zero(t, allocs)
	assert.Equal(t, int64(1), h.PendingTimeouts())
	assert.Equal(t, uint64(1001), h.Stats().Resets)
}

// TestResetRacesCancelStopAndExpiry resets, cancels and lets expire many
// timeouts from many goroutines at once, on a real clock, then stops the
// timer: each timeout ends exactly once (ran, cancelled by the one Cancel
// that returned true, or returned by Stop), and none runs before its
// deadline, that of the last Reset that returned true.
func TestResetRacesCancelStopAndExpiry(t *testing.T) {
	h := startTimer(t, WithTickDuration(time.Millisecond))
	const n = 2000
	type entry struct {
		to        Timeout
		ran       atomic.Int32
		cancelled atomic.Int32
		ranAt     atomic.Pointer[time.Time]
	}
	entries := make([]*entry, n)
	for i := range entries {
		e := &entry{}
		entries[i] = e
		to, err := h.AfterFunc(time.Duration(rand.IntN(5))*time.Millisecond, func() {
			now := time.Now()
			e.ranAt.Store(&now)
			e.ran.Add(1)
		})
		require.NoError(t, err)
		e.to = to
	}
	wait := racetest.Run(4, n, func(p, i int) {
		e := entries[(i*7+p*131)%n]
		switch p {
		case 0, 1:
			e.to.Reset(time.Duration(rand.IntN(4)) * time.Millisecond)
		case 2:
			if i%3 == 0 && e.to.Cancel() {
				e.cancelled.Add(1)
			}
		default:
			_ = e.to.Deadline()
		}
	})
	wait()
	returned := map[Timeout]bool{}
	for _, to := range h.Stop() {
		returned[to] = true
	}
	for i, e := range entries {
		ends := int(e.ran.Load()) + int(e.cancelled.Load())
		if returned[e.to] {
			ends++
		}
		require.Equal(t, 1, ends, "timeout %d: ran %d, cancelled %d, returned %v", i, e.ran.Load(), e.cancelled.Load(), returned[e.to])
		if e.ran.Load() == 1 {
			// No Reset succeeds once the timeout is claimed: Deadline is
			// the one it ran for.
			ranAt := *e.ranAt.Load()
			require.False(t, ranAt.Before(e.to.Deadline()), "timeout %d ran at %v, before its deadline %v", i, ranAt, e.to.Deadline())
		}
	}
	statsBalance(t, h.Stats())
}
