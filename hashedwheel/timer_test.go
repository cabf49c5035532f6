package hashedwheel

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
	"github.com/wheeltimer/wheeltimer/pool"
)

func TestNewRejectsInvalidOptions(t *testing.T) {
	cases := []struct {
		opt  Option
		want string
	}{
		{WithTickDuration(0), "WithTickDuration(0s)"},
		{WithTickDuration(-time.Second), "WithTickDuration(-1s)"},
		{WithTickDuration(100 * time.Microsecond), "WithTickDuration(100µs): expected at least MinTickDuration, 1ms"},
		{WithTicksPerWheel(0), "WithTicksPerWheel(0)"},
		{WithTicksPerWheel(-4), "WithTicksPerWheel(-4)"},
		{WithTicksPerWheel(MaxTicksPerWheel + 1), "WithTicksPerWheel(2097153): expected 1 to MaxTicksPerWheel, 2097152"},
		{WithTicksPerWheel(1 << 30), "WithTicksPerWheel(1073741824)"},
		{WithExecutor(nil), "WithExecutor(<nil>)"},
		{WithLogger(nil), "WithLogger(<nil>)"},
	}
	for _, c := range cases {
		h, err := New(c.opt)
		assert.Nil(t, h)
		assert.ErrorIs(t, err, ErrInvalidOption)
		assert.ErrorContains(t, err, c.want)
	}
}

// TestNewRejectsATickThatWouldOverflowTheWheel: the error names both
// options and both values, since either can be changed.
func TestNewRejectsATickThatWouldOverflowTheWheel(t *testing.T) {
	_, err := New(WithTicksPerWheel(1<<20), WithTickDuration(math.MaxInt64/(1<<20)))
	assert.ErrorIs(t, err, ErrInvalidOption)
	assert.ErrorContains(t, err, "WithTickDuration(2h26m36.093022207s) with WithTicksPerWheel(1048576)")

	_, err = New(WithTicksPerWheel(1<<21-5), WithTickDuration(2*time.Hour+30*time.Minute))
	assert.ErrorIs(t, err, ErrInvalidOption)
	assert.ErrorContains(t, err, "WithTickDuration(2h30m0s) with WithTicksPerWheel(2097147)", "the values given")
	assert.ErrorContains(t, err, "a tick below 1h13m18.046511103s")
}

// TestNewRefusesNilOptionsAndTypedNilExecutors: no input crashes New or,
// later, the timer.
func TestNewRefusesNilOptionsAndTypedNilExecutors(t *testing.T) {
	h, err := New(WithTickDuration(time.Second), nil)
	assert.Nil(t, h)
	assert.ErrorIs(t, err, ErrInvalidOption)
	assert.ErrorContains(t, err, "option 2 of 2 is nil")

	var exec *pool.Ants
	h, err = New(WithExecutor(exec))
	assert.Nil(t, h)
	assert.ErrorIs(t, err, ErrInvalidOption)
	assert.ErrorContains(t, err, "WithExecutor(<nil>)")
	var fn executorFunc
	_, err = New(WithExecutor(fn))
	assert.ErrorIs(t, err, ErrInvalidOption)
}

// TestZeroHashedWheelTimerIsUsable: the zero value is a timer with the
// default options.
func TestZeroHashedWheelTimerIsUsable(t *testing.T) {
	var h HashedWheelTimer
	assert.Zero(t, h.PendingTimeouts())
	assert.Zero(t, h.Stats())
	ran := make(chan struct{})
	_, err := h.AfterFunc(time.Millisecond, func() { close(ran) })
	require.NoError(t, err)
	<-ran
	assert.Equal(t, DefaultTickDuration, h.config.tickDuration)
	assert.Empty(t, h.Stop())

	var never HashedWheelTimer
	assert.Nil(t, never.Stop(), "Stop of a zero timer")
	_, err = never.AfterFunc(time.Millisecond, func() {})
	assert.ErrorIs(t, err, ErrStopped)
}

// TestZeroTimerFirstUseRacesNothing: Stats and PendingTimeouts called
// while the first NewTimeout of a zero HashedWheelTimer sets it up read
// nothing it writes (-race would report it), and never report more than
// was scheduled.
func TestZeroTimerFirstUseRacesNothing(t *testing.T) {
	for range 25 {
		var h HashedWheelTimer
		scheduled := make(chan struct{})
		go func() {
			defer close(scheduled)
			_, err := h.AfterFunc(time.Hour, func() {})
			assert.NoError(t, err)
		}()
		for {
			s := h.Stats()
			assert.LessOrEqual(t, s.Pending, int64(1))
			assert.LessOrEqual(t, h.PendingTimeouts(), int64(1))
			if isClosed(scheduled) {
				break
			}
			runtime.Gosched()
		}
		assert.Len(t, h.Stop(), 1)
	}
}

func TestNewDefaultsAndRounding(t *testing.T) {
	h, err := New()
	require.NoError(t, err)
	assert.Equal(t, DefaultTickDuration, h.config.tickDuration)
	assert.Equal(t, DefaultTicksPerWheel, h.config.ticksPerWheel)
	assert.Zero(t, h.maxPending)

	for in, want := range map[int]int{1: 1, 2: 2, 3: 4, 500: 512, 512: 512, 513: 1024, MaxTicksPerWheel - 1: MaxTicksPerWheel, MaxTicksPerWheel: MaxTicksPerWheel} {
		h, err := New(WithTicksPerWheel(in))
		require.NoError(t, err)
		assert.Equal(t, want, h.config.ticksPerWheel, "WithTicksPerWheel(%d)", in)
	}
	h, err = New(WithMaxPendingTimeouts(-5))
	require.NoError(t, err)
	assert.Zero(t, h.maxPending, "a negative limit means none")
}

// TestNewNamesEveryInvalidOption: with several invalid options, the error
// names each, with its value, and wraps ErrInvalidOption.
func TestNewNamesEveryInvalidOption(t *testing.T) {
	h, err := New(WithTickDuration(100*time.Microsecond), WithTicksPerWheel(0), nil, WithLogger(nil))
	assert.Nil(t, h)
	assert.ErrorIs(t, err, ErrInvalidOption)
	for _, want := range []string{"WithTickDuration(100µs)", "WithTicksPerWheel(0)", "option 3 of 4 is nil", "WithLogger(<nil>)"} {
		assert.ErrorContains(t, err, want)
	}
}

func TestNewTimeoutRejectsNilTasks(t *testing.T) {
	h, _ := newFakeTimer(t)
	_, err := h.NewTimeout(nil, time.Second)
	assert.ErrorIs(t, err, ErrNilTask)
	_, err = h.NewTimeout(TaskFunc(nil), time.Second)
	assert.ErrorIs(t, err, ErrNilTask)
	_, err = h.AfterFunc(time.Second, nil)
	assert.ErrorIs(t, err, ErrNilTask)
	assert.Zero(t, h.PendingTimeouts())
}

func TestStopBeforeStart(t *testing.T) {
	h, err := New()
	require.NoError(t, err)
	assert.Nil(t, h.Stop())
	assert.Nil(t, h.Stop())
	assert.ErrorIs(t, h.Start(), ErrStopped)
	_, err = h.AfterFunc(time.Second, func() {})
	assert.ErrorIs(t, err, ErrStopped)
	assert.Zero(t, h.PendingTimeouts())
	assert.Equal(t, uint64(1), h.Stats().RejectedStopped)
}

func TestStartIsIdempotentAndStopIsFinal(t *testing.T) {
	h, _ := newFakeTimer(t)
	assert.NoError(t, h.Start())
	mustSchedule(t, h, noopTask, time.Hour)
	assert.Len(t, h.Stop(), 1)
	assert.Nil(t, h.Stop(), "a second Stop returns nothing")
	assert.ErrorIs(t, h.Start(), ErrStopped)
	_, err := h.NewTimeout(noopTask, time.Second)
	assert.ErrorIs(t, err, ErrStopped)
	assert.Zero(t, h.PendingTimeouts())
}

func TestTimeoutAccessors(t *testing.T) {
	h, _ := newFakeTimer(t)
	before := time.Now()
	to := mustSchedule(t, h, noopTask, time.Minute)
	assert.Same(t, h, to.Timer())
	assert.NotNil(t, to.Task())
	assert.WithinDuration(t, before.Add(time.Minute), to.Deadline(), time.Second)
	assert.False(t, to.IsExpired())
	assert.False(t, to.IsCancelled())
	assert.Contains(t, to.(*timeout).String(), "HashedWheelTimeout(deadline: ")
}

func TestCancelSucceedsOnceAndNeverAfterExpiry(t *testing.T) {
	h, fake := newFakeTimer(t)
	queued := mustSchedule(t, h, noopTask, time.Second)
	assert.True(t, queued.Cancel(), "cancel before the worker took it")
	assert.False(t, queued.Cancel())
	assert.True(t, queued.IsCancelled())

	inBucket := mustSchedule(t, h, noopTask, time.Second)
	advance(fake, testTick)
	require.Equal(t, stateScheduled, inBucket.(*timeout).currentState())
	assert.True(t, inBucket.Cancel(), "cancel in a bucket")
	assert.False(t, inBucket.Cancel())

	ran := 0
	fired := mustSchedule(t, h, TaskFunc(func(Timeout) { ran++ }), 0)
	advance(fake, testTick)
	assert.Equal(t, 1, ran)
	assert.True(t, fired.IsExpired())
	assert.False(t, fired.Cancel(), "too late")
	assert.False(t, fired.IsCancelled())
	assert.Zero(t, h.PendingTimeouts())
	assert.Equal(t, uint64(2), h.Stats().Cancelled)
}

func TestCancelledTimeoutIsUnlinkedWithinOneTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	to := mustSchedule(t, h, noopTask, time.Hour)
	advance(fake, testTick)
	require.Equal(t, 1, h.worker.wheel.size)
	to.Cancel()
	assert.Zero(t, h.PendingTimeouts(), "not pending once Cancel returned")
	advance(fake, testTick)
	// The worker is idle now, so reading its wheel does not race.
	assert.Zero(t, h.worker.wheel.size, "unlinked")
}

func TestZeroAndNegativeDelaysFireOnTheNextTick(t *testing.T) {
	h, fake := newFakeTimer(t)
	advance(fake, 5*testTick)
	ran := 0
	for _, d := range []time.Duration{0, -time.Second, math.MinInt64} {
		mustSchedule(t, h, TaskFunc(func(Timeout) { ran++ }), d)
	}
	fake.WaitAsleep()
	fake.Jump(testTick - 1)
	fake.WaitAsleep()
	assert.Zero(t, ran, "not before the tick ends")
	fake.Jump(1)
	fake.WaitAsleep()
	assert.Equal(t, 3, ran)
}

func TestHugeDelaysClamp(t *testing.T) {
	h, fake := newFakeTimer(t)
	advance(fake, time.Hour)
	to := mustSchedule(t, h, noopTask, math.MaxInt64)
	assert.Equal(t, int64(math.MaxInt64), deadlineOf(to.(*timeout).word.Load()), "clamped, not wrapped into the past")
	assert.True(t, to.Deadline().After(time.Now().Add(100*365*24*time.Hour)))
	advance(fake, 10*testTick)
	assert.False(t, to.IsExpired())
	assert.Equal(t, int64(1), h.PendingTimeouts())
}

func TestStopReturnsExactlyTheUnfinishedTimeouts(t *testing.T) {
	h, fake := newFakeTimer(t)
	mustSchedule(t, h, noopTask, 0)                      // fires
	cancelled := mustSchedule(t, h, noopTask, time.Hour) // cancelled in a bucket
	inBucket := mustSchedule(t, h, noopTask, time.Hour)
	advance(fake, testTick)
	cancelled.Cancel()
	queued := mustSchedule(t, h, noopTask, time.Hour) // never reaches the wheel
	cancelledQueued := mustSchedule(t, h, noopTask, time.Hour)
	cancelledQueued.Cancel()

	left := h.Stop()
	assert.ElementsMatch(t, []Timeout{inBucket, queued}, left)
	for _, to := range left {
		assert.True(t, to.IsCancelled())
	}
	s := h.Stats()
	assert.Equal(t, Stats{
		Scheduled: 5, Expired: 1, Cancelled: 2, ReturnedByStop: 2,
		Ticks: 1, MaxTickLag: s.MaxTickLag,
		LatenessP50: s.LatenessP50, LatenessP99: s.LatenessP99, MaxLateness: s.MaxLateness, MaxHandOffWait: s.MaxHandOffWait,
	}, s)
}

func TestCancelledHookRunsOnceForEveryProcessedCancel(t *testing.T) {
	h, fake := newFakeTimer(t)
	task := &hookTask{}
	queued := mustSchedule(t, h, task, time.Hour)
	queued.Cancel()
	inBucket := mustSchedule(t, h, task, time.Hour)
	advance(fake, testTick)
	inBucket.Cancel()
	inBucket.Cancel()
	advance(fake, testTick)
	assert.Equal(t, int32(2), task.cancelled.Load())

	mustSchedule(t, h, task, time.Hour)
	h.Stop()
	assert.Equal(t, int32(2), task.cancelled.Load(), "timeouts returned by Stop are handed back, not cancelled through the hook")
	assert.Zero(t, task.runs.Load())
}

func TestStopFromCancelledHookOnTheWorker(t *testing.T) {
	h, fake := newFakeTimer(t)
	pending := mustSchedule(t, h, noopTask, time.Hour)
	var left []Timeout
	task := &hookTask{onCancel: func(Timeout) { left = h.Stop() }}
	to := mustSchedule(t, h, task, time.Hour)
	advance(fake, testTick)
	to.Cancel()
	advance(fake, testTick)
	assert.Equal(t, []Timeout{pending}, left)
}

func TestStopFromAPoolTask(t *testing.T) {
	h, err := New(WithTickDuration(time.Millisecond))
	require.NoError(t, err)
	pending := mustSchedule(t, h, noopTask, time.Hour)
	result := make(chan []Timeout)
	_, err = h.AfterFunc(0, func() { result <- h.Stop() })
	require.NoError(t, err)
	assert.Equal(t, []Timeout{pending}, <-result)
}

func TestPanickingTaskIsRecoveredAndLogged(t *testing.T) {
	logs, logger := newLogBuffer()
	h, fake := newFakeTimer(t, WithLogger(logger))
	mustSchedule(t, h, TaskFunc(func(Timeout) { panic("boom") }), 0)
	ran := false
	mustSchedule(t, h, TaskFunc(func(Timeout) { ran = true }), 0)
	hook := &hookTask{onCancel: func(Timeout) { panic("hook boom") }}
	to := mustSchedule(t, h, hook, time.Hour)
	advance(fake, testTick)
	assert.True(t, ran, "the worker survived and ran the next task")
	to.Cancel()
	advance(fake, testTick)
	assert.Contains(t, logs.String(), "TimerTask panicked")
	assert.Contains(t, logs.String(), "panic=boom")
	assert.Contains(t, logs.String(), "Cancelled hook panicked")
	assert.Contains(t, logs.String(), "TestPanickingTaskIsRecoveredAndLogged.func1", "the stack of the panic")

	ran = false
	mustSchedule(t, h, TaskFunc(func(Timeout) { ran = true }), 0)
	advance(fake, testTick)
	assert.True(t, ran, "still ticking")
}

func TestExecutorFailureIsCountedAndTheTaskStillRuns(t *testing.T) {
	for _, panics := range []bool{false, true} {
		exec := &refusingExecutor{panics: panics}
		logs, logger := newLogBuffer()
		h, fake := newFakeTimer(t, WithExecutor(exec), WithLogger(logger))
		ran := make(chan struct{})
		mustSchedule(t, h, TaskFunc(func(Timeout) { close(ran) }), 0)
		advance(fake, testTick)
		<-ran
		assert.Equal(t, uint64(1), h.Stats().ExecutorFailures)
		assert.Contains(t, logs.String(), "executor refused")
	}
}

// TestNewTimeoutRacingStopIsNeverLost schedules from many goroutines while
// Stop runs: every accepted timeout fires or is returned by Stop, and no
// timeout rejected with ErrStopped ever runs.
func TestNewTimeoutRacingStopIsNeverLost(t *testing.T) {
	raceStopLosesNothing(t, func(h *HashedWheelTimer, i int) ([]racedTimeout, error) {
		runs := new(atomic.Int32)
		to, err := h.AfterFunc(time.Duration(i%3)*time.Millisecond, func() { runs.Add(1) })
		return []racedTimeout{{timeout: to, runs: runs}}, err
	})
}

// racedTimeout is a timeout a producer racing Stop scheduled, or nil if
// refused; runs counts its task's runs, and cancelled tells whether the
// producer's Cancel returned true.
type racedTimeout struct {
	timeout   Timeout
	runs      *atomic.Int32
	cancelled bool
}

// raceStopLosesNothing has producers call schedule(h, i) for i = 0, 1, …
// on a timer with a 1ms tick and pool.Inline until it fails with
// ErrStopped, while Stop, once each has made 50 calls, closes the timer;
// for several timers. Then every accepted timeout ran once, was cancelled
// or was returned by Stop, no refused task ran, and Stats agrees.
func raceStopLosesNothing(t *testing.T, schedule func(h *HashedWheelTimer, i int) ([]racedTimeout, error)) {
	rounds := 20
	if testing.Short() {
		rounds = 3
	}
	for range rounds {
		h, err := New(WithTickDuration(time.Millisecond), WithExecutor(pool.Inline))
		require.NoError(t, err)
		const producers = 4
		var (
			accepted [producers][]racedTimeout
			refused  [producers][]racedTimeout
			started  = make(chan struct{}, producers)
		)
		start, wait := racetest.Producers(producers, func(p, i int) bool {
			if i == 50 {
				started <- struct{}{}
			}
			raced, err := schedule(h, i)
			if errors.Is(err, ErrStopped) {
				refused[p] = raced
				return false
			}
			if !assert.NoError(t, err) { // a producer's goroutine: no require
				if i < 50 {
					started <- struct{}{} // Stop ends the others
				}
				return false
			}
			accepted[p] = append(accepted[p], raced...)
			return true
		})
		start()
		for range producers {
			<-started
		}
		left := h.Stop() // with Inline, every dispatched task has run when Stop returns
		wait()

		returned := map[Timeout]bool{}
		for _, to := range left {
			returned[to] = true
		}
		total, cancelled := 0, 0
		for p := range producers {
			for _, r := range accepted[p] {
				ends := int(r.runs.Load())
				for _, ended := range []bool{r.cancelled, returned[r.timeout]} {
					if ended {
						ends++
					}
				}
				require.Equal(t, 1, ends, "an accepted timeout ran %d times, cancelled %v, returned %v",
					r.runs.Load(), r.cancelled, returned[r.timeout])
				if r.cancelled {
					cancelled++
				}
			}
			for _, r := range refused[p] {
				require.Zero(t, r.runs.Load(), "a refused timeout never runs")
			}
			total += len(accepted[p])
		}
		s := h.Stats()
		assert.Equal(t, uint64(total), s.Scheduled)
		assert.Equal(t, uint64(cancelled), s.Cancelled)
		assert.Equal(t, s.Scheduled, s.Expired+s.Cancelled+s.ReturnedByStop)
		assert.Equal(t, len(left), int(s.ReturnedByStop))
	}
}

// TestConcurrentScheduleAndCancel is the stress test: many goroutines
// schedule and cancel at once on a real 1ms clock; every timeout ends
// exactly once, fired or cancelled.
func TestConcurrentScheduleAndCancel(t *testing.T) {
	h, err := New(WithTickDuration(time.Millisecond))
	require.NoError(t, err)
	const producers, perProducer = 8, 5000
	type outcome struct{ fired, cancelled atomic.Int32 }
	outcomes := make([]outcome, producers*perProducer)
	var ended sync.WaitGroup
	ended.Add(len(outcomes))
	racetest.Run(producers, perProducer, func(p, i int) {
		o := &outcomes[p*perProducer+i]
		to, err := h.AfterFunc(time.Duration(i%5)*time.Millisecond, func() {
			o.fired.Add(1)
			ended.Done()
		})
		if !assert.NoError(t, err) { // a producer's goroutine: no require
			ended.Done()
			return
		}
		if i%2 == 0 {
			if to.Cancel() {
				o.cancelled.Add(1)
				ended.Done()
			}
		}
		if i%100 == 0 {
			runtime.Gosched()
		}
	})()
	ended.Wait()
	for i := range outcomes {
		f, c := outcomes[i].fired.Load(), outcomes[i].cancelled.Load()
		require.Equal(t, int32(1), f+c, "timeout %d: fired %d, cancelled %d", i, f, c)
	}
	assert.Empty(t, h.Stop())
	s := h.Stats()
	assert.Equal(t, uint64(len(outcomes)), s.Scheduled)
	assert.Equal(t, s.Scheduled, s.Expired+s.Cancelled)
}

func TestStopReleasesEveryGoroutine(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	h, err := New(WithTickDuration(time.Millisecond))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		_, err := h.AfterFunc(time.Millisecond, wg.Done)
		require.NoError(t, err)
	}
	wg.Wait()
	h.Stop()
	goleak.VerifyNone(t, ignore)
}

// TestASlowCancelledHookDelaysNoTaskDueInItsTick: the Cancelled hooks of a
// tick run after its due tasks are handed to the executor, so a hook that
// blocks holds up the worker but no task due with it.
func TestASlowCancelledHookDelaysNoTaskDueInItsTick(t *testing.T) {
	h, fake := newFakeTimer(t, WithExecutor(goExecutor{}))
	entered, release := make(chan struct{}), make(chan struct{})
	hooked := mustSchedule(t, h, &hookTask{onCancel: func(Timeout) {
		close(entered)
		<-release
	}}, time.Hour)
	started := make(chan struct{})
	mustSchedule(t, h, TaskFunc(func(Timeout) { close(started) }), testTick/2)
	advance(fake, testTick/2) // both in the wheel
	require.True(t, hooked.Cancel())
	fake.WaitAsleep()
	fake.Jump(testTick) // the tick ends: the cancellation and the due task in one pass
	<-entered
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the due task waited for a blocking Cancelled hook")
	}
	close(release)
}
