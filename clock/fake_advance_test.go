package clock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/pool"
)

// newTimer returns a started timer on c, stopped when the test ends.
func newTimer(t *testing.T, c clock.Clock, opts ...hashedwheel.Option) *hashedwheel.HashedWheelTimer {
	t.Helper()
	h, err := hashedwheel.New(append([]hashedwheel.Option{hashedwheel.WithClock(c)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, h.Start())
	t.Cleanup(func() { h.Stop() })
	return h
}

// heldWakeClock is a Fake whose sleepers hold the producer that wakes an
// idle worker, once armed, until the test lets it go: a producer that has
// pushed its timeout, so that PendingTimeouts counts it, and is preempted
// before it wakes the worker.
type heldWakeClock struct {
	*clock.Fake
	holding atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func (c *heldWakeClock) Sleeper() (clockwork.Sleeper, error) {
	inner, err := c.Fake.Sleeper()
	if err != nil {
		return nil, err
	}
	return &heldWakeSleeper{Sleeper: inner, Watcher: inner.(clockwork.Watcher), WorkTracker: inner.(clockwork.WorkTracker), c: c}, nil
}

type heldWakeSleeper struct {
	clockwork.Sleeper
	clockwork.Watcher
	clockwork.WorkTracker
	c *heldWakeClock
}

func (s *heldWakeSleeper) Wake() {
	if s.c.holding.CompareAndSwap(true, false) {
		s.c.held <- struct{}{}
		<-s.c.release
	}
	s.Sleeper.Wake()
}

// TestFakeAdvanceRunsATimeoutAcceptedBeforeIt: a goroutine's AfterFunc has
// returned its timeout to the timer, which counts it pending, but has not
// yet woken the idle worker; an Advance past its deadline returns only
// once the task has run.
func TestFakeAdvanceRunsATimeoutAcceptedBeforeIt(t *testing.T) {
	c := &heldWakeClock{Fake: clock.NewFake(time.Now()), held: make(chan struct{}), release: make(chan struct{})}
	h := newTimer(t, c, hashedwheel.WithExecutor(pool.Inline))
	c.Advance(time.Second) // the worker is idle: a new timeout wakes it
	c.holding.Store(true)
	var ran atomic.Bool
	scheduled := make(chan error, 1)
	go func() {
		_, err := h.AfterFunc(time.Second, func() { ran.Store(true) })
		scheduled <- err
	}()
	<-c.held // pushed, the wake-up not yet made
	require.Equal(t, int64(1), h.PendingTimeouts())
	c.Advance(time.Second)
	ok := ran.Load()
	close(c.release)
	require.NoError(t, <-scheduled)
	assert.True(t, ok, "Advance past the deadline of a timeout accepted before it returned before its task ran")
}

// TestFakeConcurrentAdvancesAddUp: four Advance(1s) calls made while a
// task holds the clock back move it four seconds, not one.
func TestFakeConcurrentAdvancesAddUp(t *testing.T) {
	fake := clock.NewFake(time.Now())
	h := newTimer(t, fake)
	release := make(chan struct{})
	_, err := h.AfterFunc(0, func() { <-release })
	require.NoError(t, err)
	fake.Jump(time.Millisecond) // the task starts and blocks: every Advance waits for it
	var started, done sync.WaitGroup
	for range 4 {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			fake.Advance(time.Second)
		}()
	}
	started.Wait()
	for range 100 { // let the four reach their wait
		runtime.Gosched()
	}
	close(release)
	done.Wait()
	assert.Equal(t, int64(4*time.Second+time.Millisecond), fake.Nanotime())
}

// TestFakeAdvanceFromATaskPanics: Advance or Settle called from a task,
// on a pool goroutine or inline on the worker, would wait for its own
// caller: it panics with a message naming the fix, and the timer carries
// on.
func TestFakeAdvanceFromATaskPanics(t *testing.T) {
	for name, exec := range map[string]pool.Executor{"pool": nil, "inline": pool.Inline} {
		t.Run(name, func(t *testing.T) {
			fake := clock.NewFake(time.Now())
			var opts []hashedwheel.Option
			if exec != nil {
				opts = append(opts, hashedwheel.WithExecutor(exec))
			}
			h := newTimer(t, fake, opts...)
			got := make(chan any, 2)
			for _, call := range []func(){func() { fake.Advance(time.Second) }, fake.Settle} {
				_, err := h.AfterFunc(time.Millisecond, func() {
					defer func() { got <- recover() }()
					call()
				})
				require.NoError(t, err)
			}
			fake.Advance(time.Millisecond)
			for range 2 {
				msg := fmt.Sprint(<-got)
				assert.Contains(t, msg, "called from a task")
				assert.Contains(t, msg, "call Jump there")
			}
			assert.Equal(t, int64(time.Millisecond), fake.Nanotime(), "the clock did not move")
			assert.Len(t, h.Stop(), 0)
		})
	}
}

// TestFakeBlockUntilContext waits until code on another goroutine has
// scheduled two timeouts, then advances to their deadline; a wait that
// cannot be met ends with its context, with an error giving the count.
func TestFakeBlockUntilContext(t *testing.T) {
	fake := clock.NewFake(time.Now())
	h := newTimer(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ran atomic.Int32
	go func() {
		for range 2 {
			_, _ = h.AfterFunc(time.Minute, func() { ran.Add(1) })
		}
	}()
	require.NoError(t, fake.BlockUntilContext(ctx, 2))
	fake.Advance(time.Minute)
	assert.Equal(t, int32(2), ran.Load())

	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	err := fake.BlockUntilContext(short, 1)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Contains(t, err.Error(), "0 waiters, waited for 1")
}
