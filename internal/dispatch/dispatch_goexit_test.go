package dispatch_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// TestGoexitKeepsTheExecutorsSize: on a pool of one goroutine, a task
// that calls runtime.Goexit ends its drain function; the rest of its
// dispatch, and a newer dispatch waiting for the slot, go on through the
// pool, handed to a successor holding the same slot, and never beside it:
// one task runs at a time. Carried on on a goroutine of its own, the rest
// ran beside the pool's goroutine.
func TestGoexitKeepsTheExecutorsSize(t *testing.T) {
	exec, err := antspool.New(1)
	require.NoError(t, err)
	defer func() { require.NoError(t, exec.ReleaseContext(context.Background())) }()
	const exits, overlapWindow = 1, 100 * time.Millisecond
	gate := make(chan struct{})
	var running, most atomic.Int32
	ran := make(chan int, 3)
	d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: exec.Cap(), Run: func(task int) {
		now := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		ran <- task
		if task == exits {
			<-gate
			runtime.Goexit()
		}
		// Give a task run beside this one the time to start.
		deadline := time.Now().Add(overlapWindow)
		for most.Load() < 2 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	}})
	d.Dispatch(dues(exits, 2))
	d.Dispatch(dues(3)) // waits for the one slot
	require.Equal(t, exits, <-ran)
	close(gate)
	for range 2 {
		select {
		case <-ran:
		case <-time.After(waitBound):
			require.Fail(t, "a task was lost after a Goexit")
		}
	}
	closeAndWaitIdle(t, d)
	assert.Equal(t, int32(1), most.Load(), "tasks running at once on a pool of one goroutine")
}
