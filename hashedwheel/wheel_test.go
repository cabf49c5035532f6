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

// newTestTimeout returns a queued timeout, for the wheel to take.
func newTestTimeout(deadline int64) *timeout {
	return &timeout{deadline: deadline}
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
		require.True(t, w.schedule(to))
		assert.Equal(t, stateScheduled, to.currentState())
		assert.Equal(t, c.bucket, to.bucketIndex(), "bucket of deadline %d ticks", c.deadline/wheelTick)
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
	require.True(t, w.schedule(to))
	require.Equal(t, uint32(3), to.bucketIndex())
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
	// Cancel's compare-and-swap, without the report to a timer.
	require.True(t, due.cancelForStop())
	require.True(t, later.cancelForStop())
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
	to.state.Store(stateScheduled) // in bucket 0, no rounds: only a bug could do this
	w.buckets[0].add(to)
	w.size++
	fired, misplaced := w.expire(w.tickEnd(), nil)
	assert.Empty(t, fired)
	assert.Equal(t, 1, misplaced)
	assert.Equal(t, stateScheduled, to.currentState())
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
		b.add(ts[i])
	}
	b.remove(ts[0]) // head
	b.remove(ts[2]) // middle
	b.remove(ts[3]) // tail
	require.Same(t, ts[1], b.head)
	require.Same(t, ts[1], b.tail)
	assert.Nil(t, ts[1].prev)
	assert.Nil(t, ts[1].next)
	b.add(ts[0])
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

// TestCancelledWhileQueuedAreDroppedBetweenTicks: schedule-and-cancel churn
// does not wait for a tick to be released. Each shard wakes the worker
// every wakeEvery pushes, and the worker drops what was cancelled, so with
// the clock stopped fewer than wakeEvery per shard are still held.
func TestCancelledWhileQueuedAreDroppedBetweenTicks(t *testing.T) {
	h, fake := newFakeTimer(t)
	held := len(h.shards) * (wakeEvery - 1)
	n := 4 * len(h.shards) * wakeEvery
	for i := 0; i < n; i++ {
		timeout, err := h.NewTimeout(noopTask, time.Hour)
		require.NoError(t, err)
		require.True(t, timeout.Cancel())
	}
	fake.Settle()
	stats := h.Stats()
	assert.Zero(t, stats.Ticks, "no tick has run")
	assert.GreaterOrEqual(t, stats.Cancelled, uint64(n-held), "all but the last few thousand per shard were dropped")
	assert.Equal(t, int64(n)-int64(stats.Cancelled), h.PendingTimeouts())

	advance(fake, testTick)
	assert.Equal(t, uint64(n), h.Stats().Cancelled, "the tick drops the rest")
	assert.Zero(t, h.PendingTimeouts())
}

// TestTimeoutsTakenInBetweenTicksGoIntoTheWheelWithinTheBudget: what the
// worker takes in between ticks goes into the wheel at once, within what is
// left of the last tick's transfer budget, and still fires on its own tick,
// never before.
func TestTimeoutsTakenInBetweenTicksGoIntoTheWheelWithinTheBudget(t *testing.T) {
	h, fake := newFakeTimer(t)
	_, err := h.NewTimeout(noopTask, time.Hour) // keeps the worker ticking
	require.NoError(t, err)
	advance(fake, testTick) // a tick has run: its budget is left
	n := 2 * len(h.shards) * wakeEvery
	fired := 0
	task := TaskFunc(func(Timeout) { fired++ })
	for i := 0; i < n; i++ {
		mustSchedule(t, h, task, 0)
	}
	fake.Settle()
	assert.Zero(t, fired, "nothing fires before its tick")
	assert.Zero(t, h.worker.staged.len(), "within the budget: nothing staged")
	assert.GreaterOrEqual(t, h.worker.wheel.size, 1+n-len(h.shards)*(wakeEvery-1), "taken into the wheel between ticks")

	advance(fake, testTick)
	assert.Equal(t, n, fired, "all fire on their tick")
	assert.Equal(t, int64(1), h.PendingTimeouts())
}

// TestTimeoutsBeyondTheBudgetWaitStagedForTheTick: before the first tick no
// transfer budget is left, so what the worker takes in waits, staged and
// still queued, as it would in Netty's queue: cancelling one is still a
// single compare-and-swap, and the others reach the wheel at the tick. Each
// shard's timeouts are staged in the order they were made.
func TestTimeoutsBeyondTheBudgetWaitStagedForTheTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	n := 2 * len(h.shards) * wakeEvery
	fired := 0
	task := TaskFunc(func(Timeout) { fired++ })
	made := make(map[*timeout]int, n)
	timeouts := make([]Timeout, n)
	for i := range timeouts {
		timeouts[i] = mustSchedule(t, h, task, 0)
		made[timeouts[i].(*timeout)] = i
	}
	fake.Settle()
	w := h.worker
	require.GreaterOrEqual(t, w.staged.len(), n-len(h.shards)*(wakeEvery-1), "taken in between ticks")
	last := map[*shard]int{}
	for _, to := range w.staged.items[w.staged.head:] {
		require.Equal(t, stateQueued, to.currentState(), "staged, still queued")
		s := h.shardOf(to)
		if prev, ok := last[s]; ok {
			require.Less(t, prev, made[to], "a shard's timeouts are staged in the order they were made")
		}
		last[s] = made[to]
	}
	require.True(t, timeouts[0].Cancel(), "the oldest is staged")
	assert.Zero(t, w.wheel.size, "nothing in the wheel before the tick")

	advance(fake, testTick)
	assert.Equal(t, n-1, fired, "all but the cancelled one fire on their tick")
	assert.Zero(t, h.PendingTimeouts())
	assert.Equal(t, uint64(1), h.Stats().Cancelled)
}

// TestStagedCancellationsAreDroppedWithinTheTicksDiscardLimit: timeouts
// cancelled after the worker staged them are dropped by the ticks, at most
// maxDiscardsPerTick per tick, so that no tick is held up by churn.
func TestStagedCancellationsAreDroppedWithinTheTicksDiscardLimit(t *testing.T) {
	h, fake := newFakeTimer(t)
	const n = maxDiscardsPerTick + maxTransfersPerTick/2
	timeouts := make([]Timeout, n)
	for i := range timeouts {
		timeouts[i] = mustSchedule(t, h, noopTask, time.Hour)
	}
	fake.Settle()
	h.worker.takeIntake() // the worker is asleep: the fake clock holds it
	for _, to := range timeouts {
		require.True(t, to.Cancel())
	}
	advance(fake, testTick)
	assert.Equal(t, uint64(maxDiscardsPerTick), h.Stats().Cancelled, "one tick drops at most its limit")
	advance(fake, testTick)
	assert.Equal(t, uint64(n), h.Stats().Cancelled, "the next tick drops the rest")
	assert.Zero(t, h.PendingTimeouts())
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
