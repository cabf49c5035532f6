package hashedwheel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/clock"
)

// These tests drive the wheel's arithmetic directly, tick by tick, with no
// goroutine and no clock: each tick is expired at the instant it ends.

const wheelTick = int64(time.Millisecond)

func newTestTimeout(deadline int64) *timeout {
	t := &timeout{deadline: deadline}
	t.state.Store(stateScheduled)
	return t
}

// expireTicks runs n ticks of w, each expired at its end, and returns the
// tick at which each timeout expired.
func expireTicks(w *wheel, n int, firedAt map[*timeout]int64) {
	for i := 0; i < n; i++ {
		due, misplaced := w.expire(w.tickEnd(), nil)
		if misplaced != 0 {
			panic("misplaced timeouts")
		}
		for _, t := range due {
			firedAt[t] = w.tick
		}
		w.advance()
	}
}

func TestWheelBucketAndRounds(t *testing.T) {
	w := newWheel(8, wheelTick)
	w.tick = 5
	cases := []struct {
		deadline int64
		bucket   uint32
		rounds   int64
	}{
		{deadline: 5 * wheelTick, bucket: 5, rounds: 0},               // due this tick
		{deadline: 5*wheelTick + wheelTick - 1, bucket: 5, rounds: 0}, // end of this tick
		{deadline: 6 * wheelTick, bucket: 6, rounds: 0},
		{deadline: 12 * wheelTick, bucket: 4, rounds: 0}, // wraps into an earlier bucket
		{deadline: 13 * wheelTick, bucket: 5, rounds: 1}, // one turn away: current bucket
		{deadline: 30 * wheelTick, bucket: 6, rounds: 3},
		{deadline: 0, bucket: 5, rounds: 0}, // in the past: current tick
		{deadline: -100 * wheelTick, bucket: 5, rounds: -13},
	}
	for _, c := range cases {
		to := newTestTimeout(c.deadline)
		w.schedule(to)
		assert.Equal(t, c.bucket, to.bucket, "bucket of deadline %d ticks", c.deadline/wheelTick)
		assert.Equal(t, c.rounds, to.remainingRounds, "rounds of deadline %d ticks", c.deadline/wheelTick)
	}
	assert.Equal(t, len(cases), w.size)
}

// TestWheelFiresOnTheTickCoveringTheDeadline checks, for random deadlines
// scheduled at random ticks on small wheels, that each timeout expires at
// the tick that covers its deadline (or the tick it was scheduled at, if
// that one has passed), never before its deadline.
func TestWheelFiresOnTheTickCoveringTheDeadline(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, 8, 64} {
		w := newWheel(size, wheelTick)
		firedAt := map[*timeout]int64{}
		want := map[*timeout]int64{}
		for step := 0; step < 200; step++ {
			for k := rng.IntN(5); k > 0; k-- {
				deadline := w.tick*wheelTick + rng.Int64N(int64(size)*5*wheelTick) - 2*wheelTick
				to := newTestTimeout(deadline)
				want[to] = max(deadline/wheelTick, w.tick)
				w.schedule(to)
			}
			expireTicks(w, rng.IntN(3)+1, firedAt)
		}
		expireTicks(w, size*5+3, firedAt)
		require.Len(t, firedAt, len(want), "wheel of %d: every timeout expires", size)
		for to, tick := range want {
			assert.Equal(t, tick, firedAt[to], "wheel of %d, deadline %d", size, to.deadline)
			assert.LessOrEqual(t, to.deadline, (firedAt[to]+1)*wheelTick, "never early")
		}
		assert.Zero(t, w.size)
	}
}

// TestWheelTransferBeforeExpire: a timeout due exactly one turn after the
// current tick lands in the current bucket; the pass that follows its
// transfer must take its round, or it would fire a turn late.
func TestWheelTransferBeforeExpire(t *testing.T) {
	w := newWheel(4, wheelTick)
	w.tick = 3
	to := newTestTimeout(7 * wheelTick) // tick 7 = current bucket, one round
	w.schedule(to)
	require.Equal(t, uint32(3), to.bucket)
	require.Equal(t, int64(1), to.remainingRounds)
	firedAt := map[*timeout]int64{}
	expireTicks(w, 5, firedAt)
	assert.Equal(t, int64(7), firedAt[to], "fires on tick 7, not 11")
}

func TestWheelCancelledTimeoutsAreLeftForTheCancelPass(t *testing.T) {
	w := newWheel(4, wheelTick)
	due := newTestTimeout(0)
	later := newTestTimeout(4 * wheelTick) // one round
	w.schedule(due)
	w.schedule(later)
	due.state.Store(stateCancelled)
	later.state.Store(stateCancelled)
	fired, _ := w.expire(w.tickEnd(), nil)
	assert.Empty(t, fired)
	assert.Equal(t, 2, w.size, "both still linked")
	assert.Equal(t, int64(1), later.remainingRounds, "a cancelled timeout keeps its rounds")
	w.remove(due)
	w.remove(later)
	assert.Zero(t, w.size)
	assert.Nil(t, w.buckets[0].head)
	assert.Nil(t, w.buckets[0].tail)
}

func TestWheelKeepsAMisplacedTimeoutInsteadOfFiringItEarly(t *testing.T) {
	w := newWheel(4, wheelTick)
	to := newTestTimeout(10 * wheelTick)
	w.buckets[0].add(to, 0) // wrong bucket, no rounds: only a bug could do this
	w.size++
	fired, misplaced := w.expire(w.tickEnd(), nil)
	assert.Empty(t, fired)
	assert.Equal(t, 1, misplaced)
	assert.Equal(t, stateScheduled, to.state.Load())
}

func TestWheelSkipToOnlyMovesAnEmptyWheel(t *testing.T) {
	w := newWheel(4, wheelTick)
	w.skipTo(10*wheelTick + 5)
	assert.Equal(t, int64(10), w.tick)
	w.skipTo(3 * wheelTick)
	assert.Equal(t, int64(10), w.tick, "never backwards")
	w.schedule(newTestTimeout(20 * wheelTick))
	w.skipTo(50 * wheelTick)
	assert.Equal(t, int64(10), w.tick, "a wheel holding timeouts replays every tick")
}

func TestWheelTickEndSaturates(t *testing.T) {
	w := newWheel(1, wheelTick)
	w.tick = math.MaxInt64/wheelTick - 1
	assert.Equal(t, (w.tick+1)*wheelTick, w.tickEnd(), "the last tick that ends in range")
	w.tick++
	assert.Equal(t, int64(math.MaxInt64), w.tickEnd())

	huge := newWheel(1, 1<<62)
	assert.Equal(t, int64(1<<62), huge.tickEnd(), "tick 0 of a huge tick ends in range")
	huge.advance()
	assert.Equal(t, int64(math.MaxInt64), huge.tickEnd())
}

func TestBucketRemoveKeepsOrder(t *testing.T) {
	var b bucket
	ts := make([]*timeout, 4)
	for i := range ts {
		ts[i] = newTestTimeout(int64(i))
		b.add(ts[i], 0)
	}
	b.remove(ts[0]) // head
	b.remove(ts[2]) // middle
	b.remove(ts[3]) // tail
	require.Same(t, ts[1], b.head)
	require.Same(t, ts[1], b.tail)
	assert.Nil(t, ts[1].prev)
	assert.Nil(t, ts[1].next)
	b.add(ts[0], 0)
	var order []int64
	b.clear(func(t *timeout) { order = append(order, t.deadline) })
	assert.Equal(t, []int64{1, 0}, order)
	assert.Nil(t, b.head)
}

// The tests below drive a whole timer, worker goroutine included, with the
// fake clock.

func TestLateWorkerCatchesUpTickByTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	_, err := h.NewTimeout(noopTask, time.Hour) // keeps the worker ticking
	require.NoError(t, err)
	var order []int
	for i := 9; i >= 0; i-- {
		_, err := h.NewTimeout(TaskFunc(func(Timeout) { order = append(order, i) }), time.Duration(i)*testTick)
		require.NoError(t, err)
	}
	fake.Settle()
	fake.Advance(10 * testTick) // the worker wakes ten ticks late
	fake.Settle()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, order, "one tick at a time, in deadline order")
	stats := h.Stats()
	assert.Equal(t, uint64(10), stats.Ticks)
	assert.Equal(t, 9*testTick, stats.MaxTickLag, "tick 0 was processed nine ticks late")
	assert.Equal(t, int64(11)*int64(testTick), fake.SleepingUntil(), "back on schedule: sleeping until the end of tick 10")
}

// TestInlineTasksOfATickRunInDeadlineOrder: timeouts reach the worker
// through several queues, in no particular order; with pool.Inline the
// tasks of one tick still run in deadline order.
func TestInlineTasksOfATickRunInDeadlineOrder(t *testing.T) {
	h, fake := newFakeTimer(t)
	var order []int
	for i := 0; i < 200; i++ {
		mustSchedule(t, h, TaskFunc(func(Timeout) { order = append(order, i) }), testTick/2)
		fake.Advance(testTick / 400) // distinct deadlines, all in tick 0
	}
	advance(fake, testTick)
	require.Len(t, order, 200)
	for i := range order {
		require.Equal(t, i, order[i])
	}
}

func TestTransferIsCappedPerTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	const n = 2*maxTransfersPerTick + 500
	fired := 0
	task := TaskFunc(func(Timeout) { fired++ })
	for i := 0; i < n; i++ {
		_, err := h.NewTimeout(task, 0)
		require.NoError(t, err)
	}
	fake.Settle()
	for tick, want := range []int{maxTransfersPerTick, 2 * maxTransfersPerTick, n} {
		advance(fake, testTick)
		assert.Equal(t, want, fired, "after tick %d", tick)
	}
	assert.Zero(t, h.PendingTimeouts())
}

func TestChurnBeyondDiscardLimitIsDroppedBeforeNextTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	// More cancelled-while-queued timeouts than one tick may drop, and than
	// one catch-up pass may: the rest must not wait for later ticks, or
	// churn faster than the limit would grow the queues without bound.
	const n = maxDiscardsPerTick + 2*maxDiscardsPerCatchUp + 1
	for i := 0; i < n; i++ {
		timeout, err := h.NewTimeout(noopTask, time.Hour)
		require.NoError(t, err)
		require.True(t, timeout.Cancel())
	}
	fired := false
	_, err := h.NewTimeout(TaskFunc(func(Timeout) { fired = true }), testTick)
	require.NoError(t, err)
	fake.Settle()
	require.Zero(t, h.Stats().Cancelled, "nothing is dropped before the first tick ends")

	fake.Advance(testTick)
	fake.Settle()
	stats := h.Stats()
	assert.Equal(t, uint64(n), stats.Cancelled, "all dropped before the next tick")
	assert.Equal(t, uint64(1), stats.Ticks, "catching up runs no tick")
	assert.Equal(t, int64(1), h.PendingTimeouts(), "the live timeout behind them is in the wheel")

	advance(fake, testTick)
	assert.True(t, fired, "it fires on its own tick")
}

func TestTimeoutMadeAtWheelTurnFiresAfterOneTurn(t *testing.T) {
	const size = 4
	h, fake := newFakeTimer(t, WithTicksPerWheel(size))
	advance(fake, 2*testTick) // the wheel is at tick 2
	fired := false
	_, err := h.NewTimeout(TaskFunc(func(Timeout) { fired = true }), size*testTick)
	require.NoError(t, err)
	advance(fake, size*testTick)
	assert.False(t, fired, "deadline at the start of tick 6: not before its end")
	advance(fake, testTick)
	assert.True(t, fired, "fires at the end of tick 6, not a turn later")
}

func TestIdleWorkerSleepsUntilWoken(t *testing.T) {
	h, fake := newFakeTimer(t, WithTickDuration(time.Millisecond))
	assert.Equal(t, clock.Forever, fake.SleepingUntil(), "nothing pending: no tick is armed")

	fired := make(chan struct{}, 1)
	_, err := h.NewTimeout(TaskFunc(func(Timeout) { fired <- struct{}{} }), 3*time.Millisecond)
	require.NoError(t, err)
	fake.Settle()
	assert.Less(t, fake.SleepingUntil(), clock.Forever, "a pending timeout arms the next tick")

	for i := 0; i < 4; i++ {
		fake.Advance(time.Millisecond)
		fake.Settle()
	}
	<-fired
	// It lingers for lingerTime, so that back-to-back NewTimeout calls do not
	// each pay a wake-up, then sleeps.
	lingered := 0
	for fake.SleepingUntil() != clock.Forever {
		fake.Advance(time.Millisecond)
		fake.Settle()
		lingered++
		require.LessOrEqual(t, lingered, int(lingerTime/time.Millisecond), "still ticking after lingerTime")
	}
	assert.GreaterOrEqual(t, lingered, int(lingerTime/time.Millisecond)-1, "lingers before sleeping")
	ticks := h.Stats().Ticks

	fake.Advance(time.Hour) // an hour of idleness costs no tick
	fake.Settle()
	assert.Equal(t, ticks, h.Stats().Ticks)

	_, err = h.NewTimeout(TaskFunc(func(Timeout) { fired <- struct{}{} }), time.Millisecond)
	require.NoError(t, err)
	fake.Settle()
	fake.Advance(2 * time.Millisecond)
	fake.Settle()
	<-fired
	assert.LessOrEqual(t, h.Stats().Ticks-ticks, uint64(3), "waking skips the idle hour instead of replaying it")
}
