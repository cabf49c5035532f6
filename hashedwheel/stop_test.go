package hashedwheel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/pool"
)

// TestStopContextLosesNoTimeout: StopContext whose context ends before the
// worker has stopped returns none of the pending timeouts, or all of them,
// and a later Stop returns what it did not: with pool.Inline and a context
// already cancelled, each pending timeout reaches the caller exactly once.
func TestStopContextLosesNoTimeout(t *testing.T) {
	for range 20 { // the race between the context and the worker goes either way
		h := startTimer(t, WithExecutor(pool.Inline), WithLogger(discardLogger()))
		pending := make([]Timeout, 10)
		for i := range pending {
			pending[i] = mustSchedule(t, h, noopTask, time.Hour)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		got, err := h.StopContext(ctx)
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
		}
		got = append(got, h.Stop()...)
		assert.ElementsMatch(t, pending, got, "every pending timeout, once")
		assert.Nil(t, h.Stop(), "returned once")
		s := h.Stats()
		assert.Equal(t, uint64(len(pending)), s.ReturnedByStop)
		assert.Zero(t, s.Pending)
	}
}

// blockingExecutor blocks in Execute until released, then runs the task on
// a goroutine of its own.
type blockingExecutor struct {
	entered chan struct{} // receives once per Execute call
	release chan struct{}
}

func (e blockingExecutor) Execute(task func()) error {
	e.entered <- struct{}{}
	<-e.release
	go task()
	return nil
}

// blockingHook is a task whose Cancelled hook blocks until released.
type blockingHook struct {
	entered chan struct{}
	release chan struct{}
}

func (blockingHook) Run(Timeout) {}

func (b blockingHook) Cancelled(Timeout) {
	b.entered <- struct{}{}
	<-b.release
}

// TestStopContextBoundsAWorkerHeldOutsideTasks: a worker held in an
// executor's Execute, or in a Cancelled hook, keeps Stop waiting, but not
// StopContext past its context's end; the pending timeouts then reach the
// next Stop, once what held the worker returns.
func TestStopContextBoundsAWorkerHeldOutsideTasks(t *testing.T) {
	for _, held := range []string{"Execute", "Cancelled hook"} {
		t.Run(held, func(t *testing.T) {
			entered, release := make(chan struct{}, 1), make(chan struct{})
			opts := []Option{WithTickDuration(time.Millisecond)}
			if held == "Execute" {
				opts = append(opts, WithExecutor(blockingExecutor{entered, release}))
			}
			h := startTimer(t, opts...)
			pending := mustSchedule(t, h, noopTask, time.Hour)
			if held == "Execute" {
				mustSchedule(t, h, noopTask, 0)
			} else {
				hooked := mustSchedule(t, h, blockingHook{entered, release}, time.Hour)
				require.Eventually(t, func() bool { return hooked.(*timeout).currentState() == stateScheduled },
					10*time.Second, time.Millisecond, "taken into the wheel")
				require.True(t, hooked.Cancel())
			}
			<-entered // the worker is held
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			returned := make(chan error)
			go func() {
				got, err := h.StopContext(ctx)
				assert.Empty(t, got, "the worker had not stopped")
				returned <- err
			}()
			select {
			case err := <-returned:
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			case <-time.After(10 * time.Second):
				close(release)
				require.Fail(t, "StopContext ignored its context while the worker was held")
			}
			close(release)
			assert.Equal(t, []Timeout{pending}, h.Stop(), "the next Stop returns the pending timeout")
		})
	}
}
