package clock_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

var (
	_ clock.Clock           = (*clock.Real)(nil)
	_ clock.Clock           = (*clock.Fake)(nil)
	_ clock.Clock           = struct{ *clock.Fake }{} // a custom clock embeds one
	_ clockwork.WorkTracker = newSleeper(clock.NewFake(time.Time{})).(clockwork.WorkTracker)
	_ clockwork.Watcher     = newSleeper(clock.NewFake(time.Time{})).(clockwork.Watcher)
)

// start is the wall-clock time of the fakes.
var start = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// TestRealNanotimeStartsAtZeroAndNeverDecreases: Nanotime counts from the
// clock's making, on the monotonic clock; Now is the runtime's.
func TestRealNanotimeStartsAtZeroAndNeverDecreases(t *testing.T) {
	before := time.Now()
	r := clock.NewReal()
	first := r.Nanotime()
	assert.GreaterOrEqual(t, first, int64(0))
	assert.Less(t, first, int64(time.Second), "counted from NewReal")
	prev := first
	for range 10_000 {
		n := r.Nanotime()
		require.GreaterOrEqual(t, n, prev, "monotonic")
		prev = n
	}
	now := r.Now()
	assert.False(t, now.Before(before))
	assert.False(t, now.After(time.Now()))
}

// TestRealSleeperSleepsUntilTheInstant: a Real sleeper returns once its
// clock reads the instant (callers re-check, as Sleep may return early),
// at once for an instant past, and a Forever sleep ends only by Wake.
func TestRealSleeperSleepsUntilTheInstant(t *testing.T) {
	r := clock.NewReal()
	s := newSleeper(r)
	defer s.Close()

	until := r.Nanotime() + int64(20*time.Millisecond)
	for r.Nanotime() < until {
		s.Sleep(until)
	}
	assert.Less(t, r.Nanotime()-until, int64(5*time.Second), "woke in time, on a loaded machine too")

	s.Sleep(r.Nanotime() - 1) // past: returns at once, or the test hangs

	wakeEndsAForeverSleep(s)
}

// wakeEndsAForeverSleep starts a Sleep(Forever) on a goroutine of its own
// and wakes it: it returns once that Sleep has returned, or the test hangs.
func wakeEndsAForeverSleep(s clockwork.Sleeper) {
	woken := make(chan struct{})
	go func() {
		defer close(woken)
		s.Sleep(clockwork.Forever)
	}()
	s.Wake()
	<-woken
}

// TestSleeperWakeBeforeSleepEndsTheNextSleep, on both clocks: a Wake with
// no Sleep in progress is kept for the next one, several Wakes count as
// one, and Wake never blocks.
func TestSleeperWakeBeforeSleepEndsTheNextSleep(t *testing.T) {
	for name, c := range map[string]clock.Clock{"Real": clock.NewReal(), "Fake": clock.NewFake(start)} {
		t.Run(name, func(t *testing.T) {
			s := newSleeper(c)
			defer s.Close()
			s.Wake()
			s.Wake() // never blocks, with a wake already pending
			s.Sleep(clockwork.Forever)
			// The pending wake was used: the next Forever sleep needs another.
			wakeEndsAForeverSleep(s)
		})
	}
}

// newSleeper returns c's sleeper, registered with c as a timer's is as it
// starts.
func newSleeper(c clock.Clock) clockwork.Sleeper {
	s, err := c.Sleeper()
	if err != nil {
		panic(err)
	}
	if w, ok := s.(clockwork.Watcher); ok {
		w.Watch(nil)
	}
	return s
}

// TestFakeReadsStartUntilMoved: a Fake's Now reads its start and Nanotime
// 0 until Advance or Jump moves them, together; a negative move changes
// nothing.
func TestFakeReadsStartUntilMoved(t *testing.T) {
	f := clock.NewFake(start)
	assert.Equal(t, start, f.Now())
	assert.Zero(t, f.Nanotime())
	assert.Equal(t, clockwork.Forever, f.SleepingUntil(), "no sleeper")

	f.Advance(90 * time.Second)
	assert.Equal(t, start.Add(90*time.Second), f.Now())
	assert.Equal(t, int64(90*time.Second), f.Nanotime())

	f.Jump(time.Hour)
	assert.Equal(t, start.Add(time.Hour+90*time.Second), f.Now())

	f.Advance(-time.Hour)
	f.Jump(-time.Hour)
	assert.Equal(t, int64(time.Hour+90*time.Second), f.Nanotime(), "never backwards")
}

// sleepThrough sleeps s until each instant in turn, recording the clock's
// reading at each wake-up, then until Forever; it returns a function that
// ends the sleeping, wherever it is, and waits for the goroutine.
func sleepThrough(f *clock.Fake, s clockwork.Sleeper, instants []int64, woke *[]int64) (end func()) {
	var ended atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, at := range instants {
			for f.Nanotime() < at {
				if s.Sleep(at); ended.Load() {
					return
				}
			}
			*woke = append(*woke, f.Nanotime()) // read by the caller after done
		}
		for !ended.Load() {
			s.Sleep(clockwork.Forever)
		}
	}()
	return func() {
		ended.Store(true)
		s.Wake()
		<-done
	}
}

// TestFakeAdvanceStopsAtEachInstantASleeperWaitsFor: Advance moves the
// clock to each instant a sleeper sleeps until, in order, and waits there
// until it is asleep again; it returns with the clock at its target and
// every sleeper asleep, and never moves a sleeper past an instant before
// it woke there.
func TestFakeAdvanceStopsAtEachInstantASleeperWaitsFor(t *testing.T) {
	f := clock.NewFake(start)
	s := newSleeper(f)
	defer s.Close()
	var woke []int64
	ms := int64(time.Millisecond)
	end := sleepThrough(f, s, []int64{10 * ms, 20 * ms, 35 * ms, 80 * ms}, &woke)
	f.WaitAsleep()
	assert.Equal(t, 10*ms, f.SleepingUntil())

	f.Advance(5 * time.Millisecond)
	assert.Equal(t, 10*ms, f.SleepingUntil(), "not woken before its instant")
	f.Advance(45 * time.Millisecond)
	assert.Equal(t, 50*ms, f.Nanotime())
	assert.Equal(t, 80*ms, f.SleepingUntil(), "asleep again when Advance returns")
	end()
	assert.Equal(t, []int64{10 * ms, 20 * ms, 35 * ms}, woke, "woken at each instant, in order")
}

// TestFakeJumpWakesWithoutWaiting: Jump moves the clock at once and wakes
// the sleepers whose instant has come; Settle then waits until they are
// asleep again.
func TestFakeJumpWakesWithoutWaiting(t *testing.T) {
	f := clock.NewFake(start)
	s := newSleeper(f)
	defer s.Close()
	var woke []int64
	ms := int64(time.Millisecond)
	end := sleepThrough(f, s, []int64{10 * ms, 20 * ms}, &woke)
	f.WaitAsleep()

	f.Jump(30 * time.Millisecond) // past both instants at once
	f.Settle()
	assert.Equal(t, clockwork.Forever, f.SleepingUntil())
	end()
	assert.Equal(t, []int64{30 * ms, 30 * ms}, woke, "both woken at the time jumped to")
}

// TestFakeSettleWaitsForTrackedWork: tasks counted through a sleeper's
// WorkTracker hold Settle and Advance until they are counted finished;
// WaitAsleep does not wait for them.
func TestFakeSettleWaitsForTrackedWork(t *testing.T) {
	f := clock.NewFake(start)
	s := newSleeper(f)
	defer s.Close()
	var woke []int64
	end := sleepThrough(f, s, nil, &woke)
	defer end()
	f.WaitAsleep()

	tracker := s.(clockwork.WorkTracker)
	tracker.Started(2)
	f.WaitAsleep() // returns with the work still counted

	var finished atomic.Int32
	settled := make(chan int32)
	go func() {
		f.Settle()
		settled <- finished.Load()
	}()
	advanced := make(chan int32)
	go func() {
		f.Advance(time.Second)
		advanced <- finished.Load()
	}()
	finished.Add(1)
	tracker.Finished(1)
	finished.Add(1)
	tracker.Finished(1)
	assert.Equal(t, int32(2), <-settled, "Settle returned before the work finished")
	assert.Equal(t, int32(2), <-advanced, "Advance returned before the work finished")
	assert.Equal(t, int64(time.Second), f.Nanotime())
}

// TestFakeCloseDetachesASleeper: a sleeper awake holds Settle; once
// closed, it no longer does.
func TestFakeCloseDetachesASleeper(t *testing.T) {
	f := clock.NewFake(start)
	s := newSleeper(f) // made, never asleep: Settle waits for it

	var closed atomic.Bool
	settled := make(chan bool)
	go func() {
		f.Settle()
		settled <- closed.Load()
	}()
	closed.Store(true)
	s.Close()
	assert.True(t, <-settled, "Settle returned while a sleeper was awake")
	f.Advance(time.Hour) // no sleeper: returns at once
	assert.Equal(t, clockwork.Forever, f.SleepingUntil())
}

// TestFakeIsSafeForConcurrentUse: readers, Advance, Jump and a sleeper at
// once, under the race detector; the clock ends at the sum of the moves.
func TestFakeIsSafeForConcurrentUse(t *testing.T) {
	f := clock.NewFake(start)
	s := newSleeper(f)
	defer s.Close()
	var woke []int64
	end := sleepThrough(f, s, []int64{int64(time.Millisecond), int64(time.Second)}, &woke)
	f.WaitAsleep()

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			prev := f.Nanotime()
			for range 1000 {
				n := f.Nanotime()
				assert.GreaterOrEqual(t, n, prev)
				prev = n
				_ = f.Now()
			}
		})
	}
	for range 100 {
		f.Jump(time.Millisecond)
	}
	wg.Wait()
	f.Advance(time.Second)
	end()
	assert.Equal(t, int64(1100*time.Millisecond), f.Nanotime())
	assert.Len(t, woke, 2)
}

// steppedFake is a custom clock as a user writes one: a Fake whose Now
// reads an hour back.
type steppedFake struct{ *clock.Fake }

func (c steppedFake) Now() time.Time { return c.Fake.Now().Add(-time.Hour) }

// TestTheSleeperOfAnEmbeddingClockIsItsFakes: a clock that embeds a Fake
// gets the Fake's sleeper, which the Fake's Advance drives and which shows
// the timer to the Fake, as a timer on the Fake itself would.
func TestTheSleeperOfAnEmbeddingClockIsItsFakes(t *testing.T) {
	c := steppedFake{clock.NewFake(time.Now())}
	s := newSleeper(c)
	_, watcher := s.(clockwork.Watcher)
	_, tracker := s.(clockwork.WorkTracker)
	assert.True(t, watcher && tracker, "a Fake's sleeper, %T", s)

	slept := make(chan struct{})
	go func() {
		defer close(slept)
		defer s.Close() // a worker that ends detaches its sleeper: Advance waits for no one
		for c.Nanotime() < int64(time.Second) {
			s.Sleep(int64(time.Second))
		}
	}()
	c.WaitAsleep()
	require.Equal(t, int64(time.Second), c.SleepingUntil())
	c.Advance(time.Second)
	<-slept
	assert.Equal(t, clockwork.Forever, c.SleepingUntil(), "closed: no sleeper waits")
}
