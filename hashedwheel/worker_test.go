package hashedwheel

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/clockwork"
)

// These tests drive a whole timer, worker goroutine included, with the
// fake clock. The shard count is fixed where a test depends on it, so that
// no test depends on the machine's core count.

func TestLateWorkerCatchesUpTickByTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	_, err := h.NewTimeout(noopTask, time.Hour) // keeps the worker ticking
	require.NoError(t, err)
	var order []int
	for i := 9; i >= 0; i-- {
		_, err := h.NewTimeout(TaskFunc(func(Timeout) { order = append(order, i) }), time.Duration(i+1)*testTick) // tick i
		require.NoError(t, err)
	}
	fake.WaitAsleep()
	fake.Jump(10 * testTick) // the worker wakes ten ticks late
	fake.WaitAsleep()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, order, "one tick at a time, in deadline order")
	stats := h.Stats()
	assert.Equal(t, uint64(10), stats.Ticks)
	assert.Equal(t, 9*testTick, stats.MaxTickLag, "tick 0 was processed nine ticks late")
	assert.Equal(t, int64(11)*int64(testTick), sleepingUntil(h), "back on schedule: sleeping until the end of tick 10")
}

// TestInlineTasksOfATickRunInDeadlineOrder: timeouts reach the worker
// through several queues, in no particular order; with pool.Inline the
// tasks of one tick still run in deadline order.
func TestInlineTasksOfATickRunInDeadlineOrder(t *testing.T) {
	h, fake := newFakeTimer(t)
	var order []int
	for i := 0; i < 200; i++ {
		mustSchedule(t, h, TaskFunc(func(Timeout) { order = append(order, i) }), testTick/2)
		fake.Jump(testTick / 400) // distinct deadlines, all in tick 0
	}
	advance(fake, testTick)
	require.Len(t, order, 200)
	for i := range order {
		require.Equal(t, i, order[i])
	}
}

func TestTransferIsCappedPerTick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs over 200,000 timeouts, a number the per-tick limit fixes")
	}
	h, fake := newFakeTimer(t)
	const n = 2*maxTransfersPerTick + 500
	fired := 0
	task := TaskFunc(func(Timeout) { fired++ })
	for i := 0; i < n; i++ {
		_, err := h.NewTimeout(task, 0)
		require.NoError(t, err)
	}
	fake.WaitAsleep()
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
	h, fake := newFakeTimer(t, withShards(4))
	held := len(h.shards) * (wakeEvery - 1)
	n := 4 * len(h.shards) * wakeEvery
	for i := 0; i < n; i++ {
		timeout, err := h.NewTimeout(noopTask, time.Hour)
		require.NoError(t, err)
		require.True(t, timeout.Cancel())
	}
	fake.WaitAsleep()
	stats := h.Stats()
	assert.Zero(t, stats.Ticks, "no tick has run")
	assert.GreaterOrEqual(t, stats.Cancelled, uint64(n-held), "all but the last few thousand per shard were dropped")
	assert.Equal(t, int64(n)-int64(stats.Cancelled), h.PendingTimeouts())

	advance(fake, testTick)
	assert.Equal(t, uint64(n), h.Stats().Cancelled, "the tick drops the rest")
	assert.Zero(t, h.PendingTimeouts())
}

// TestTimeoutsCollectedBetweenTicksGoIntoTheWheelWithinTheBudget: what the
// worker takes in between ticks goes into the wheel at once, within what is
// left of the last tick's transfer budget, and still fires on its own tick,
// never before.
func TestTimeoutsCollectedBetweenTicksGoIntoTheWheelWithinTheBudget(t *testing.T) {
	h, fake := newFakeTimer(t, withShards(2))
	_, err := h.NewTimeout(noopTask, time.Hour) // keeps the worker ticking
	require.NoError(t, err)
	advance(fake, testTick) // a tick has run: its budget is left
	n := 2 * len(h.shards) * wakeEvery
	fired := 0
	task := TaskFunc(func(Timeout) { fired++ })
	for i := 0; i < n; i++ {
		mustSchedule(t, h, task, 0)
	}
	fake.WaitAsleep()
	assert.Zero(t, fired, "nothing fires before its tick")
	assert.Zero(t, stagedLen(h.worker), "within the budget: nothing staged")
	assert.GreaterOrEqual(t, h.worker.wheel.size, 1+n-len(h.shards)*(wakeEvery-1), "taken into the wheel between ticks")

	advance(fake, testTick)
	assert.Equal(t, n, fired, "all fire on their tick")
	assert.Equal(t, int64(1), h.PendingTimeouts())
}

// stagedLen returns how many timeouts w holds staged.
func stagedLen(w *worker) int {
	n := 0
	for t := w.staged; t != nil; t = t.next {
		n++
	}
	return n
}

// scheduleOnWhichShard schedules a timeout on h, whose producers are this
// goroutine alone, and returns it with the shard it was pushed onto: the
// one whose count of pushes it raised.
func scheduleOnWhichShard(t *testing.T, h *HashedWheelTimer, task TimerTask) (Timeout, *shard) {
	before := make([]uint64, len(h.shards))
	for i := range h.shards {
		before[i] = h.shards[i].pushed()
	}
	to := mustSchedule(t, h, task, 0)
	for i := range h.shards {
		if h.shards[i].pushed() != before[i] {
			return to, &h.shards[i]
		}
	}
	t.Fatal("no shard counted the push")
	return nil, nil
}

// TestTimeoutsBeyondTheBudgetWaitStagedForTheTick: before the first tick no
// transfer budget is left, so what the worker takes in waits, staged and
// still queued, as it would in Netty's queue: cancelling one is still a
// single compare-and-swap, and the others reach the wheel at the tick. Each
// shard's timeouts are staged in the order they were made.
func TestTimeoutsBeyondTheBudgetWaitStagedForTheTick(t *testing.T) {
	h, fake := newFakeTimer(t, withShards(2))
	n := 2 * len(h.shards) * wakeEvery
	fired := 0
	task := TaskFunc(func(Timeout) { fired++ })
	made := make(map[*timeout]int, n)
	onShard := make(map[*timeout]*shard, n)
	timeouts := make([]Timeout, n)
	for i := range timeouts {
		var s *shard
		timeouts[i], s = scheduleOnWhichShard(t, h, task)
		made[timeouts[i].(*timeout)] = i
		onShard[timeouts[i].(*timeout)] = s
	}
	fake.WaitAsleep()
	w := h.worker
	require.GreaterOrEqual(t, stagedLen(w), n-len(h.shards)*(wakeEvery-1), "taken in between ticks")
	last := map[*shard]int{}
	for to := w.staged; to != nil; to = to.next {
		require.Equal(t, stateQueued, to.currentState(), "staged, still queued")
		s := onShard[to]
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
	if testing.Short() {
		t.Skip("-short: needs over a million timeouts, a number the per-tick limits fix")
	}
	h, fake := newFakeTimer(t)
	const n = maxDiscardsPerTick + maxTransfersPerTick/2
	timeouts := make([]Timeout, n)
	for i := range timeouts {
		timeouts[i] = mustSchedule(t, h, noopTask, time.Hour)
	}
	fake.WaitAsleep()
	h.worker.transferTimeoutsToBuckets(h.now()) // the worker is asleep, its budget spent: it stages the rest
	for _, to := range timeouts {
		require.True(t, to.Cancel())
	}
	assert.Equal(t, uint64(n), h.Stats().Cancelled, "each counted by its Cancel")
	assert.Zero(t, h.PendingTimeouts())
	advance(fake, testTick)
	// The worker is asleep again: reading its staging does not race.
	assert.Equal(t, n-maxDiscardsPerTick, stagedLen(h.worker), "one tick drops at most its limit")
	advance(fake, testTick)
	assert.Zero(t, stagedLen(h.worker), "the next tick drops the rest")
}

func TestTimeoutMadeAtWheelTurnFiresAfterOneTurn(t *testing.T) {
	const size = 4
	h, fake := newFakeTimer(t, WithTicksPerWheel(size))
	advance(fake, 2*testTick) // the wheel is at tick 2
	fired := false
	// Deadline 70ms, the end of tick 6: filed in the current bucket, tick 2's.
	_, err := h.NewTimeout(TaskFunc(func(Timeout) { fired = true }), (size+1)*testTick)
	require.NoError(t, err)
	advance(fake, size*testTick)
	assert.False(t, fired, "deadline at the end of tick 6: not before it")
	advance(fake, testTick)
	assert.True(t, fired, "fires at the end of tick 6, not a turn later")
}

func TestIdleWorkerSleepsUntilWoken(t *testing.T) {
	h, fake := newFakeTimer(t, WithTickDuration(time.Millisecond))
	assert.Equal(t, clockwork.Forever, sleepingUntil(h), "nothing pending: no tick is armed")

	fired := make(chan struct{}, 1)
	_, err := h.NewTimeout(TaskFunc(func(Timeout) { fired <- struct{}{} }), 3*time.Millisecond)
	require.NoError(t, err)
	fake.WaitAsleep()
	assert.Less(t, sleepingUntil(h), clockwork.Forever, "a pending timeout arms the next tick")

	for i := 0; i < 4; i++ {
		fake.Jump(time.Millisecond)
		fake.WaitAsleep()
	}
	<-fired
	// It lingers for lingerTime, so that back-to-back NewTimeout calls do not
	// each pay a wake-up, then sleeps.
	lingered := 0
	for sleepingUntil(h) != clockwork.Forever {
		fake.Jump(time.Millisecond)
		fake.WaitAsleep()
		lingered++
		require.LessOrEqual(t, lingered, int(lingerTime/time.Millisecond), "still ticking after lingerTime")
	}
	assert.GreaterOrEqual(t, lingered, int(lingerTime/time.Millisecond)-1, "lingers before sleeping")
	ticks := h.Stats().Ticks

	fake.Jump(time.Hour) // an hour of idleness costs no tick
	fake.WaitAsleep()
	assert.Equal(t, ticks, h.Stats().Ticks)

	_, err = h.NewTimeout(TaskFunc(func(Timeout) { fired <- struct{}{} }), time.Millisecond)
	require.NoError(t, err)
	fake.WaitAsleep()
	fake.Jump(2 * time.Millisecond)
	fake.WaitAsleep()
	<-fired
	assert.LessOrEqual(t, h.Stats().Ticks-ticks, uint64(3), "waking skips the idle hour instead of replaying it")
}

// TestWorkerSleepsUntilTheFirstDueTick: with timeouts pending far away, the
// worker, once it has lingered, sleeps until the end of the first tick with
// something due, whatever the wheel's size, and processes no tick before.
func TestWorkerSleepsUntilTheFirstDueTick(t *testing.T) {
	for _, c := range []struct {
		name  string
		delay time.Duration
		n     int
	}{{"one timeout an hour away", time.Hour, 1}, {"10 000 ten minutes away", 10 * time.Minute, 10_000}} {
		h, fake := newFakeTimer(t, WithTickDuration(time.Millisecond), WithTicksPerWheel(512))
		for range c.n {
			mustSchedule(t, h, noopTask, c.delay)
		}
		fake.WaitAsleep()
		for i := 0; sleepingUntil(h) < int64(time.Second); i++ {
			require.Less(t, i, 1000, "%s: still ticking after a second", c.name)
			fake.Jump(time.Millisecond)
			fake.WaitAsleep()
		}
		due := int64(c.delay) // on a tick's end: the end of the tick covering it
		assert.Equal(t, due, sleepingUntil(h), "%s: asleep until the end of the tick covering the deadline", c.name)
		assert.Zero(t, h.Stats().Ticks, "%s: no tick walked", c.name)
		fake.Jump(c.delay)
		fake.WaitAsleep()
		s := h.Stats()
		assert.Equal(t, uint64(c.n), s.Expired, c.name)
		assert.LessOrEqual(t, s.Ticks, uint64(2), "%s: the due tick, not every tick", c.name)
	}
}

// TestCancelReachesASleepingWorkerAtOnce: while the worker sleeps until a
// timeout ten minutes away, a successful Cancel wakes it, so that with the
// clock standing still the cancellation shows in PendingTimeouts, releases
// its place under the limit, runs its hook and drops the timeout from the
// wheel.
func TestCancelReachesASleepingWorkerAtOnce(t *testing.T) {
	h, fake := newFakeTimer(t, WithMaxPendingTimeouts(1))
	hook := &hookTask{}
	to := mustSchedule(t, h, hook, 10*time.Minute)
	advance(fake, lingerTime+2*testTick)
	require.Greater(t, sleepingUntil(h), int64(time.Minute), "asleep until the timeout")
	require.True(t, to.Cancel())
	fake.WaitAsleep() // the clock does not move
	assert.Zero(t, h.PendingTimeouts())
	assert.Equal(t, int32(1), hook.cancelled.Load())
	assert.Zero(t, h.worker.wheel.size)
	mustSchedule(t, h, noopTask, time.Hour) // the place is free
}

// TestAStaleWakeDoesNotReplayTheIdleTime: a wake-up that reaches a sleeping
// worker late, or for no reason, after an hour of idleness, makes it
// replay none of the hour's ticks.
func TestAStaleWakeDoesNotReplayTheIdleTime(t *testing.T) {
	h, fake := newFakeTimer(t)
	fake.Jump(time.Hour)
	h.sleeper.Wake() // as a producer's periodic wake-up arriving late would
	fake.WaitAsleep()
	fired := false
	mustSchedule(t, h, TaskFunc(func(Timeout) { fired = true }), testTick)
	h.sleeper.Wake()
	advance(fake, 2*testTick)
	assert.True(t, fired)
	assert.LessOrEqual(t, h.Stats().Ticks, uint64(2), "the idle hour was replayed")
}

// TestALateWorkerCatchingUpKeepsToItsList: a worker that wakes fifty ticks
// late, with a thousand timeouts due in each, dispatches as its list fills
// instead of growing it to hold them all, and every task runs.
func TestALateWorkerCatchingUpKeepsToItsList(t *testing.T) {
	const ticks, perTick = 50, 1000
	h, fake := newFakeTimer(t)
	var ran atomic.Int64
	for k := range ticks {
		for range perTick {
			mustSchedule(t, h, TaskFunc(func(Timeout) { ran.Add(1) }), time.Duration(k+1)*testTick)
		}
	}
	fake.Jump((ticks + 1) * testTick)
	fake.WaitAsleep()
	assert.Equal(t, int64(ticks*perTick), ran.Load(), "tasks run")
	assert.LessOrEqual(t, cap(h.worker.due), maxKeptDue, "the list of runs the worker collected while catching up")
}

// TestAStormLeavesNothingBehind: a million timeouts expiring together
// grow the worker's lists; within trimAfter of the storm's end the heap is
// back within a MiB of what it was, whether the worker then sleeps or,
// with an Every running, keeps ticking.
func TestAStormLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a storm small enough to be quick retains less than the 1 MiB bound, so it could not fail")
	}
	n := 1_000_000
	if raceEnabled {
		n = 200_000
	}
	for _, ticking := range []bool{false, true} {
		t.Run(fmt.Sprintf("ticking=%v", ticking), func(t *testing.T) {
			h, fake := newFakeTimer(t)
			if ticking {
				_, err := h.Every(testTick, func() {})
				require.NoError(t, err)
			}
			advance(fake, testTick)
			before := heapInUse()
			for range n {
				mustSchedule(t, h, noopTask, testTick)
			}
			for h.Stats().Expired < uint64(n) {
				advance(fake, testTick)
			}
			advance(fake, trimAfter)
			after := heapInUse()
			assert.Less(t, int64(after)-int64(before), int64(1<<20), "retained after the storm: %d bytes", int64(after)-int64(before))
			runtime.KeepAlive(h)
		})
	}
}
