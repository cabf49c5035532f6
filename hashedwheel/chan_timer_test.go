package hashedwheel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedExecutor runs each task on a goroutine of its own once the test
// opens gate, after telling started: a run handed over and not yet run,
// for as long as the test needs.
type gatedExecutor struct {
	started chan struct{}
	gate    chan struct{}
}

func newGatedExecutor() gatedExecutor {
	return gatedExecutor{started: make(chan struct{}, 16), gate: make(chan struct{})}
}

func (g gatedExecutor) Execute(task func()) error {
	go func() {
		g.started <- struct{}{}
		<-g.gate
		task()
	}()
	return nil
}

// TestChanTimerStopOrResetDuringTheRunSendsNothing: a Stop or Reset that
// returns while the timer's run is handed over but has not sent makes the
// run send nothing, and reports the timer active: the value was still to
// come. Without it, a receive after Stop or Reset would get the old value.
func TestChanTimerStopOrResetDuringTheRunSendsNothing(t *testing.T) {
	for _, stop := range []bool{true, false} {
		name := map[bool]string{true: "Stop", false: "Reset"}[stop]
		t.Run(name, func(t *testing.T) {
			exec := newGatedExecutor()
			h, fake := newFakeTimer(t, WithExecutor(exec))
			tim, err := h.NewTimer(testTick / 2)
			require.NoError(t, err)
			fake.Jump(testTick)
			recvWithin(t, exec.started, 10*time.Second, "the run handed over")
			if stop {
				assert.True(t, tim.Stop(), "the time was still to come")
			} else {
				active, err := tim.Reset(time.Hour)
				require.NoError(t, err)
				assert.True(t, active, "the time was still to come")
			}
			close(exec.gate)
			h.Stop() // returns once the run has returned
			assert.Empty(t, tim.C, "the run of the old arming sent nothing")
			if !stop {
				assert.Equal(t, uint64(1), h.Stats().ChanFallbacks, "the Reset's new arming was pending at Stop")
				tim.Stop()
			}
		})
	}
}

// TestTickerResetDuringATickSendsNothing: a tick handed over before a
// Ticker's Reset or Stop and run after it sends nothing.
func TestTickerResetDuringATickSendsNothing(t *testing.T) {
	for _, stop := range []bool{true, false} {
		name := map[bool]string{true: "Stop", false: "Reset"}[stop]
		t.Run(name, func(t *testing.T) {
			exec := newGatedExecutor()
			h, fake := newFakeTimer(t, WithExecutor(exec))
			tk, err := h.NewTicker(testTick)
			require.NoError(t, err)
			fake.Jump(2 * testTick)
			recvWithin(t, exec.started, 10*time.Second, "the tick handed over")
			if stop {
				tk.Stop()
			} else {
				require.NoError(t, tk.Reset(time.Hour))
			}
			close(exec.gate)
			h.Stop() // returns once the run has returned
			assert.Empty(t, tk.C, "the tick from before sent nothing")
		})
	}
}

// TestChanTimerResetBeforeItFiresReusesItsTimeout: Reset of a ChanTimer
// not yet fired moves its timeout, allocating nothing, and it then fires
// once, at the new deadline's tick end.
func TestChanTimerResetBeforeItFiresReusesItsTimeout(t *testing.T) {
	h, fake := newFakeTimer(t)
	tim, err := h.NewTimer(time.Hour)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		if active, err := tim.Reset(time.Hour); !active || err != nil {
			panic("Reset of a pending ChanTimer failed")
		}
	})
	assert.Zero(t, allocs)
	_, err = tim.Reset(3 * testTick / 2)
	require.NoError(t, err)
	advance(fake, testTick)
	assert.Empty(t, tim.C, "not before its deadline")
	advance(fake, testTick)
	assert.Len(t, tim.C, 1, "at the end of the tick of its deadline")
	advance(fake, 5*testTick)
	<-tim.C
	assert.Empty(t, tim.C, "once")
	assert.Equal(t, int64(0), h.PendingTimeouts())
}

// TestTickerDropsTicksForASlowReceiver: a Ticker's channel holds one
// tick; those that come while it waits are dropped, and the next receive
// after that one gets a tick sent after it, as with time.Ticker.
func TestTickerDropsTicksForASlowReceiver(t *testing.T) {
	h, fake := newFakeTimer(t)
	tk, err := h.NewTicker(testTick)
	require.NoError(t, err)
	defer tk.Stop()
	start := fake.Now()
	advance(fake, 5*testTick)
	require.Len(t, tk.C, 1)
	first := <-tk.C
	assert.False(t, first.Before(start.Add(testTick)), "the first tick, never early")
	assert.False(t, first.After(start.Add(2*testTick)), "the first tick waited; those after it were dropped")
	assert.Empty(t, tk.C)
	received := fake.Now()
	advance(fake, 2*testTick)
	require.Len(t, tk.C, 1)
	assert.True(t, (<-tk.C).After(received), "the next receive gets a tick sent after the first receive")
}
