package hashedwheel

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/pool"
)

// TestEveryRunsAtFixedRate: the k-th run is due at the call's time plus k
// periods and runs at the end of the tick covering it, never before and
// without drift, however the period falls across ticks.
func TestEveryRunsAtFixedRate(t *testing.T) {
	h, fake := newFakeTimer(t)
	advance(fake, 3*testTick+testTick/3) // the call is not on a tick end
	start := fake.Nanotime()
	period := 25 * time.Millisecond // two and a half ticks
	var runs []int64
	to, err := h.Every(period, func() { runs = append(runs, fake.Nanotime()) })
	require.NoError(t, err)
	advance(fake, 30*period+testTick)
	require.Len(t, runs, 30)
	for k, at := range runs {
		due := start + int64(k+1)*int64(period)
		end := (due/int64(testTick) + 1) * int64(testTick)
		// The clock moves a tick at a time from start: the first reading
		// at or after the end of the tick covering the run's deadline.
		want := start + (end-start+int64(testTick)-1)/int64(testTick)*int64(testTick)
		assert.Equal(t, want, at, "run %d is due at %d", k+1, due)
	}
	assert.False(t, to.IsExpired(), "a periodic timeout never expires")
	assert.Equal(t, int64(1), h.PendingTimeouts(), "it counts as one pending timeout")
	s := h.Stats()
	assert.Equal(t, uint64(30), s.PeriodicRuns)
	assert.Zero(t, s.Expired)
	assert.Equal(t, []Timeout{to}, h.Stop(), "Stop returns it")
	assert.True(t, to.IsCancelled())
}

func TestEveryCancelEndsTheRuns(t *testing.T) {
	h, fake := newFakeTimer(t)
	runs := 0
	to, err := h.Every(testTick, func() { runs++ })
	require.NoError(t, err)
	advance(fake, 5*testTick)
	require.Equal(t, 4, runs)
	require.True(t, to.Cancel())
	assert.False(t, to.Cancel())
	advance(fake, 5*testTick)
	assert.Equal(t, 4, runs, "no run after Cancel")
	assert.Zero(t, h.PendingTimeouts())
	assert.Empty(t, h.Stop())
}

// TestEveryCancelFromItsOwnRun: a run that cancels its timeout is the last.
func TestEveryCancelFromItsOwnRun(t *testing.T) {
	h, fake := newFakeTimer(t)
	var to Timeout
	runs := 0
	to, err := h.Every(testTick, func() {
		runs++
		if runs == 3 {
			assert.True(t, to.Cancel())
		}
	})
	require.NoError(t, err)
	advance(fake, 10*testTick)
	assert.Equal(t, 3, runs)
}

// TestEverySkipsRunsWhileOneIsRunning: on a pool, a run that comes due
// while the previous one still runs is skipped, as time.Ticker drops
// ticks; runs never overlap, and a Cancel leaves at most the run in
// progress.
func TestEverySkipsRunsWhileOneIsRunning(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(goExecutor{}))
	var running, overlaps, runs atomic.Int32
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	to, err := h.Every(testTick, func() {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		runs.Add(1)
		entered <- struct{}{}
		<-release
		running.Add(-1)
	})
	require.NoError(t, err)
	advance(fake, 2*testTick) // due at the end of tick 0: runs at the end of tick 1
	<-entered                 // the first run blocks
	advance(fake, 5*testTick)
	assert.Equal(t, int32(1), runs.Load(), "runs due meanwhile are skipped")
	assert.Equal(t, uint64(5), h.Stats().PeriodicSkipped)
	require.True(t, to.Cancel())
	close(release)
	advance(fake, 5*testTick)
	h.Stop() // waits for the run in progress
	assert.Equal(t, int32(1), runs.Load(), "no run starts after Cancel")
	assert.Zero(t, overlaps.Load())
}

// TestEveryResetMovesTheNextRunAndKeepsThePeriod.
func TestEveryResetMovesTheNextRunAndKeepsThePeriod(t *testing.T) {
	h, fake := newFakeTimer(t)
	var runs []int64
	to, err := h.Every(4*testTick, func() { runs = append(runs, fake.Nanotime()) })
	require.NoError(t, err)
	advance(fake, testTick)
	require.True(t, to.Reset(10*testTick)) // next run due at tick 11
	advance(fake, 19*testTick)
	assert.Equal(t, []int64{int64(12 * testTick), int64(16 * testTick), int64(20 * testTick)}, runs)
}

func TestEveryRefusesBadArguments(t *testing.T) {
	h, _ := newFakeTimer(t)
	for _, p := range []time.Duration{0, -time.Second} {
		to, err := h.Every(p, func() {})
		assert.Nil(t, to)
		assert.True(t, errors.Is(err, ErrInvalidPeriod), "%v", err)
		assert.ErrorContains(t, err, "Every("+p.String()+")")
	}
	to, err := h.Every(time.Second, nil)
	assert.Nil(t, to)
	assert.ErrorIs(t, err, ErrNilTask)
	assert.Zero(t, h.Stats().Scheduled, "a failed call schedules nothing")
	h.Stop()
	_, err = h.Every(time.Second, func() {})
	assert.ErrorIs(t, err, ErrStopped)
}

// TestEveryAllocatesNothingPerRun runs a periodic timeout inline for many
// periods: the worker allocates nothing for its runs.
func TestEveryAllocatesNothingPerRun(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(pool.Inline))
	runs := 0
	_, err := h.Every(testTick, func() { runs++ })
	require.NoError(t, err)
	advance(fake, 10*testTick) // warm up the worker's lists
	allocs := testing.AllocsPerRun(200, func() {
		fake.Jump(testTick)
		fake.WaitAsleep()
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 210, runs)
}
