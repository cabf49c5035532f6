package hashedwheel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive the wheel's arithmetic directly, tick by tick, with no
// goroutine and no clock: each tick is expired at the instant it ends.

const wheelTick = int64(time.Millisecond)

// newTestTimeout returns a queued timeout, for the wheel to take in.
func newTestTimeout(deadline int64) *timeout {
	t := &timeout{timer: &intakeTimer}
	t.word.Store(withDeadline(stateQueued, deadline, 0))
	return t
}

// expireTicks runs n ticks of wh, each expired at its end, skipping the
// ticks before the earliest due one as the worker does, and records the
// tick at which each timeout was claimed.
func expireTicks(tb testing.TB, wh *wheel, n int, firedAt map[*timeout]int64) {
	tb.Helper()
	for i := 0; i < n; i++ {
		tick := wh.tick
		due, ex := wh.expire(wh.endOf(tick), nil)
		require.Zero(tb, ex.misplaced, "misplaced timeouts")
		for _, r := range due {
			firedAt[r.Task] = tick
		}
	}
}

// insert takes the queued timeout t into the wheel as the worker's
// transfer does, and reports whether it was queued.
func insert(wh *wheel, t *timeout) bool {
	w := t.word.Load()
	if w&stateMask != stateQueued || !t.word.CompareAndSwap(w, w&^stateMask|stateScheduled) {
		return false
	}
	wh.link(t, deadlineOf(w))
	return true
}

// nextTick returns the tick the worker expires next at now, as
// expireTimeouts finds it: the current one, or, up to the tick that
// covers now, the first with something due.
func nextTick(wh *wheel, now int64) int64 {
	return max(wh.tick, min(wh.earliest, now/wh.tickDuration))
}

// inTick returns a deadline in tick k, 8ns after its start: tick k covers
// (k·wheelTick, (k+1)·wheelTick].
func inTick(k int64) int64 { return k*wheelTick + deadlineUnit }

// resetTo moves t's deadline as Reset does, without a timer.
func resetTo(t *timeout, d int64) {
	for {
		w := t.word.Load()
		if t.word.CompareAndSwap(w, withDeadline(w, d, 0)) {
			return
		}
	}
}

func TestWheelFilesByTheTickOfTheDeadline(t *testing.T) {
	wh := newWheel(8, wheelTick)
	wh.tick = 5
	cases := []struct {
		deadline int64
		bucket   uint32
	}{
		{deadline: inTick(5), bucket: 5},     // due this tick
		{deadline: 6 * wheelTick, bucket: 5}, // this tick's end: due this tick
		{deadline: inTick(6), bucket: 6},
		{deadline: 5 * wheelTick, bucket: 5}, // the end of tick 4, passed: the current tick
		{deadline: inTick(12), bucket: 4},    // wraps into an earlier bucket
		{deadline: inTick(13), bucket: 5},    // one turn away: current bucket
		{deadline: 14 * wheelTick, bucket: 5},
		{deadline: inTick(30), bucket: 6},
		{deadline: 0, bucket: 5}, // in the past: the current tick
	}
	for _, c := range cases {
		to := newTestTimeout(c.deadline)
		require.True(t, insert(wh, to))
		assert.Equal(t, stateScheduled, to.currentState())
		assert.Equal(t, c.bucket, to.bucket-1, "bucket of deadline %v", time.Duration(c.deadline))
	}
	assert.Equal(t, len(cases), wh.size)
	assert.Equal(t, int64(5), wh.earliest)

	cancelled := newTestTimeout(0)
	require.True(t, cancelled.Cancel())
	assert.False(t, insert(wh, cancelled), "a timeout cancelled while queued is not taken in")
	assert.Equal(t, len(cases), wh.size)
}

// TestWheelFiresOnTheTickCoveringTheDeadline checks, for random deadlines
// taken in at random ticks on small wheels, that each timeout expires at
// the tick that covers its deadline (or the tick it was taken in at, if
// that one has passed), never before its deadline, including after the
// wheel skips the ticks with nothing due.
func TestWheelFiresOnTheTickCoveringTheDeadline(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, 8, 64, 128} {
		wh := newWheel(size, wheelTick)
		firedAt := map[*timeout]int64{}
		want := map[*timeout]int64{}
		for step := 0; step < 300; step++ {
			for k := rng.IntN(5); k > 0; k-- {
				deadline := max(wh.tick*wheelTick+rng.Int64N(int64(size)*5*wheelTick)-2*wheelTick, 0)
				to := newTestTimeout(deadline)
				want[to] = max((deadline+wheelTick-1)/wheelTick-1, wh.tick) // ⌈d/tick⌉−1
				require.True(t, insert(wh, to))
			}
			if rng.IntN(4) == 0 {
				wh.tick = nextTick(wh, (wh.tick+rng.Int64N(3*int64(size)))*wheelTick)
			}
			expireTicks(t, wh, rng.IntN(3)+1, firedAt)
		}
		for wh.size > 0 {
			wh.tick = nextTick(wh, math.MaxInt64)
			expireTicks(t, wh, 1, firedAt)
		}
		require.Len(t, firedAt, len(want), "wheel of %d: every timeout expires", size)
		for to, tick := range want {
			assert.Equal(t, tick, firedAt[to], "wheel of %d, deadline %d", size, deadlineOf(to.word.Load()))
			assert.LessOrEqual(t, deadlineOf(to.word.Load()), (firedAt[to]+1)*wheelTick, "never early")
		}
	}
}

// TestWheelTransferBeforeExpire: a timeout due exactly one turn after the
// current tick lands in the current bucket; the walk that follows passes
// it over, and it fires a turn later, not now.
func TestWheelTransferBeforeExpire(t *testing.T) {
	wh := newWheel(4, wheelTick)
	wh.tick = 3
	to := newTestTimeout(inTick(7)) // tick 7: the current bucket
	require.True(t, insert(wh, to))
	require.Equal(t, uint32(3), to.bucket-1)
	firedAt := map[*timeout]int64{}
	expireTicks(t, wh, 5, firedAt)
	assert.Equal(t, int64(7), firedAt[to], "fires on tick 7, not 3 nor 11")
}

func TestWheelCancelledTimeoutsAreLeftForTheCancelPass(t *testing.T) {
	wh := newWheel(4, wheelTick)
	due := newTestTimeout(0)
	later := newTestTimeout(4 * wheelTick) // one turn away
	insert(wh, due)
	insert(wh, later)
	// Cancel's compare-and-swap, without the report to a timer.
	require.True(t, due.cancelForStop())
	require.True(t, later.cancelForStop())
	fired, _ := wh.expire(wh.endOf(wh.tick), nil)
	assert.Empty(t, fired)
	assert.Equal(t, 2, wh.size, "both still linked")
	wh.unlink(due)
	wh.unlink(later)
	assert.Zero(t, wh.size)
	assert.Nil(t, wh.buckets[0].head)
	assert.Nil(t, wh.buckets[0].tail)
	assert.Zero(t, wh.occupied[0], "an empty bucket is marked empty")
}

func TestWheelKeepsAMisplacedTimeoutInsteadOfFiringItEarly(t *testing.T) {
	wh := newWheel(4, wheelTick)
	to := newTestTimeout(inTick(10))
	require.True(t, insert(wh, to)) // tick 10: bucket 2
	wh.tick = 10
	fired, ex := wh.expire(inTick(10)-1, nil) // now is before the deadline
	assert.Empty(t, fired)
	assert.Equal(t, 1, ex.misplaced)
	assert.Equal(t, stateScheduled, to.currentState())
}

// TestWheelResetLaterIsFiledWhenItsOldTickComes: a Reset that moves a
// deadline later leaves the timeout where it is; the walk of its old tick
// finds it not due and files it by its new deadline, where it fires.
func TestWheelResetLaterIsFiledWhenItsOldTickComes(t *testing.T) {
	wh := newWheel(8, wheelTick)
	to := newTestTimeout(inTick(2))
	require.True(t, insert(wh, to))
	resetTo(to, inTick(11)) // bucket 3, a turn away
	firedAt := map[*timeout]int64{}
	expireTicks(t, wh, 3, firedAt)
	assert.Empty(t, firedAt, "not at its old deadline")
	assert.Equal(t, uint32(3), to.bucket-1, "filed by its new deadline at tick 2")
	assert.Equal(t, int64(11), wh.earliest)
	wh.tick = nextTick(wh, 100*wheelTick)
	assert.Equal(t, int64(11), wh.tick, "the ticks before it are skipped")
	expireTicks(t, wh, 1, firedAt)
	assert.Equal(t, int64(11), firedAt[to])
}

// TestWheelRefileMovesATimeoutEarlier: the worker files again a timeout
// whose Reset moved it earlier; it fires by its new deadline.
func TestWheelRefileMovesATimeoutEarlier(t *testing.T) {
	wh := newWheel(8, wheelTick)
	to := newTestTimeout(inTick(100))
	require.True(t, insert(wh, to))
	assert.Equal(t, int64(100), wh.earliest)
	resetTo(to, inTick(3))
	wh.refile(to)
	assert.Equal(t, uint32(3), to.bucket-1)
	assert.Equal(t, int64(3), wh.earliest)
	assert.Equal(t, 1, wh.size)
	firedAt := map[*timeout]int64{}
	wh.tick = nextTick(wh, 50*wheelTick)
	expireTicks(t, wh, 1, firedAt)
	assert.Equal(t, int64(3), firedAt[to])
	assert.Zero(t, wh.size)
}

// TestWheelPeriodicRunsAdvanceByWholePeriods: a periodic timeout due is
// claimed for a run and filed for the next, the deadline advanced by whole
// periods past now, and stays scheduled; while its run is marked running,
// a due run is skipped.
func TestWheelPeriodicRunsAdvanceByWholePeriods(t *testing.T) {
	wh := newWheel(8, wheelTick)
	period := 3 * wheelTick
	to := newTestTimeout(period)
	to.period = period
	require.True(t, insert(wh, to))
	wh.tick = nextTick(wh, 100*wheelTick)
	due, ex := wh.expire(wh.endOf(wh.tick), nil)
	require.Equal(t, []dueRun{{Deadline: period, Task: to}}, due, "the run for the first deadline")
	assert.Equal(t, 1, ex.runs)
	w := to.word.Load()
	assert.Equal(t, stateScheduled, w&stateMask)
	assert.NotZero(t, w&claimedBit, "marked claimed")
	assert.Equal(t, 2*period, deadlineOf(w), "the next run is a period later")

	// The worker reaches the next run's tick more than two periods late:
	// the two missed runs are skipped, and, the first still waiting to
	// start, so is this one.
	wh.tick = 5 // the tick ending at 6ms, the next run's deadline
	due, ex = wh.expire(13*wheelTick, nil)
	assert.Empty(t, due)
	assert.Equal(t, 3, ex.skipped)
	assert.Equal(t, 5*period, deadlineOf(to.word.Load()), "the first whole period after now")

	require.True(t, to.startRun())
	require.False(t, to.endRun(), "the run returned; none owed")
	wh.tick = 14 // the tick ending at 15ms
	due, _ = wh.expire(wh.endOf(wh.tick), nil)
	assert.Equal(t, []dueRun{{Deadline: 5 * period, Task: to}}, due, "the run for the deadline it was filed for")
	assert.Equal(t, 6*period, deadlineOf(to.word.Load()))
	assert.Equal(t, 1, wh.size, "a periodic timeout stays in the wheel")
}

// TestDeadlineIsKeptTo8nsRoundedUp: the state word holds any deadline an
// int64 can, rounded up to 8ns, never earlier, with the flags intact.
func TestDeadlineIsKeptTo8nsRoundedUp(t *testing.T) {
	for _, d := range []int64{0, 1, 7, 8, 9, 1 << 40, math.MaxInt64 - 8, math.MaxInt64 - 7, math.MaxInt64} {
		w := withDeadline(stateScheduled|runningBit, d, 0)
		got := deadlineOf(w)
		assert.GreaterOrEqual(t, got, d, "never earlier")
		if got != math.MaxInt64 { // the last 16ns before math.MaxInt64 read as it
			assert.Less(t, got-d, int64(8), "within 8ns")
		}
		assert.Equal(t, stateScheduled, w&stateMask)
		assert.NotZero(t, w&runningBit)
		assert.Equal(t, w, withDeadline(w, got, 0), "stable")
	}
}

func TestNextFixedRunSaturates(t *testing.T) {
	next, skipped := nextFixedRun(math.MaxInt64-50, math.MaxInt64-20, 100)
	assert.Zero(t, skipped)
	assert.Equal(t, int64(math.MaxInt64), next)
}

// TestWheelFindEarliestScansAcrossTheWrap: the earliest due tick is found
// whichever buckets hold timeouts, across the end of the bucket array and
// across turns, on wheels smaller and larger than a bitmap word.
func TestWheelFindEarliestScansAcrossTheWrap(t *testing.T) {
	for _, size := range []int{1, 4, 64, 256} {
		for _, start := range []int64{0, 3, int64(size) - 1, 1000} {
			for _, ahead := range []int64{0, 1, 2, int64(size) - 1, int64(size), 3*int64(size) + 2} {
				wh := newWheel(size, wheelTick)
				wh.tick = start
				require.True(t, insert(wh, newTestTimeout(inTick(start+ahead))))
				require.True(t, insert(wh, newTestTimeout(inTick(start+ahead+int64(size)*7))))
				assert.Equal(t, start+ahead, wh.findEarliest(start), "wheel %d, tick %d, %d ahead", size, start, ahead)
			}
		}
	}
	assert.Equal(t, int64(math.MaxInt64), newWheel(64, wheelTick).findEarliest(5), "empty")
}

// TestWheelEarliestFollowsExpiry: once the wheel reaches its earliest due
// tick, it finds the next one, so that a worker sleeps until then.
func TestWheelEarliestFollowsExpiry(t *testing.T) {
	wh := newWheel(16, wheelTick)
	for _, tick := range []int64{40, 7, 1000} {
		require.True(t, insert(wh, newTestTimeout(inTick(tick))))
	}
	var order []int64
	for wh.size > 0 {
		order = append(order, wh.earliest)
		wh.tick = nextTick(wh, math.MaxInt64)
		expireTicks(t, wh, 1, map[*timeout]int64{})
	}
	assert.Equal(t, []int64{7, 40, 1000}, order)
	assert.Equal(t, int64(math.MaxInt64), wh.earliest)
}

func TestWheelNextTickSkipsIdleTicks(t *testing.T) {
	wh := newWheel(4, wheelTick)
	wh.tick = nextTick(wh, 10*wheelTick)
	assert.Equal(t, int64(10), wh.tick, "empty: up to the tick covering now")
	wh.tick = nextTick(wh, 3*wheelTick)
	assert.Equal(t, int64(10), wh.tick, "never backwards")
	require.True(t, insert(wh, newTestTimeout(inTick(20))))
	wh.tick = nextTick(wh, 50*wheelTick)
	assert.Equal(t, int64(20), wh.tick, "not past a due tick")
}

func TestWheelTickEndSaturates(t *testing.T) {
	wh := newWheel(1, wheelTick)
	wh.tick = math.MaxInt64/wheelTick - 1
	assert.Equal(t, (wh.tick+1)*wheelTick, wh.endOf(wh.tick), "the last tick that ends in range")
	wh.tick++
	assert.Equal(t, int64(math.MaxInt64), wh.endOf(wh.tick))

	huge := newWheel(1, 1<<62)
	assert.Equal(t, int64(1<<62), huge.endOf(0), "tick 0 of a huge tick ends in range")
	assert.Equal(t, int64(math.MaxInt64), huge.endOf(1))
}

func TestBucketRemoveKeepsOrder(t *testing.T) {
	wh := newWheel(1, wheelTick) // one bucket: every tick's
	b := &wh.buckets[0]
	ts := make([]*timeout, 4)
	for i := range ts {
		ts[i] = newTestTimeout(int64(8 * i))
		wh.link(ts[i], inTick(int64(10+i)))
	}
	assert.Equal(t, int64(10), b.minDue)
	wh.unlink(ts[0]) // head
	wh.unlink(ts[2]) // middle
	wh.unlink(ts[3]) // tail
	require.Same(t, ts[1], b.head)
	require.Same(t, ts[1], b.tail)
	assert.Nil(t, ts[1].prev)
	assert.Nil(t, ts[1].next)
	wh.link(ts[0], inTick(10))
	var order []int64
	wh.clear(func(t *timeout) { order = append(order, deadlineOf(t.word.Load())) })
	assert.Equal(t, []int64{8, 0}, order)
	assert.Nil(t, b.head)
	assert.Equal(t, int64(math.MaxInt64), b.minDue)
}
