package hashedwheel

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payloadTask returns a task whose closure holds a megabyte, and a weak
// pointer that tells whether the megabyte is still reachable.
func payloadTask() (TimerTask, weak.Pointer[[1 << 20]byte]) {
	p := new([1 << 20]byte)
	return TaskFunc(func(Timeout) { p[0]++ }), weak.Make(p)
}

// collected reports whether the object behind w was garbage collected.
func collected[T any](w weak.Pointer[T]) bool {
	for range 3 {
		runtime.GC()
		if w.Value() == nil {
			return true
		}
	}
	return false
}

// TestKeptHandleKeepsOnlyItsOwnTask: a handle the caller keeps, in every
// state it can reach, keeps alive nothing but its own task: not the task of
// a timeout made before it on the same intake stack, nor of one beside it
// in a bucket.
func TestKeptHandleKeepsOnlyItsOwnTask(t *testing.T) {
	t.Run("cancelled while queued and linked past", func(t *testing.T) {
		h, fake := newFakeTimer(t, withShards(1))
		task, payload := payloadTask()
		before := mustSchedule(t, h, task, time.Hour)
		kept := mustSchedule(t, h, noopTask, time.Hour)
		require.True(t, kept.Cancel())
		mustSchedule(t, h, noopTask, time.Hour) // links past kept
		fake.WaitAsleep()
		require.True(t, before.Cancel())
		advance(fake, testTick)
		before, task = nil, nil
		assert.True(t, collected(payload), "the kept handle holds another timeout's task")
		runtime.KeepAlive(kept)
	})
	t.Run("cancelled in a bucket", func(t *testing.T) {
		h, fake := newFakeTimer(t, withShards(1))
		task, payload := payloadTask()
		neighbour := mustSchedule(t, h, task, time.Hour)
		kept := mustSchedule(t, h, noopTask, time.Hour)
		advance(fake, testTick) // both in the same bucket
		require.True(t, kept.Cancel())
		advance(fake, testTick)
		require.True(t, neighbour.Cancel())
		advance(fake, testTick)
		neighbour, task = nil, nil
		assert.True(t, collected(payload))
		runtime.KeepAlive(kept)
	})
	t.Run("expired", func(t *testing.T) {
		h, fake := newFakeTimer(t, withShards(1))
		task, payload := payloadTask()
		neighbour := mustSchedule(t, h, task, testTick)
		kept := mustSchedule(t, h, noopTask, testTick)
		advance(fake, 3*testTick)
		require.True(t, kept.IsExpired())
		require.True(t, neighbour.IsExpired())
		neighbour, task = nil, nil
		assert.True(t, collected(payload))
		runtime.KeepAlive(kept)
	})
	t.Run("returned by Stop", func(t *testing.T) {
		h, fake := newFakeTimer(t, withShards(1))
		task, payload := payloadTask()
		mustSchedule(t, h, task, time.Hour)
		mustSchedule(t, h, noopTask, time.Hour)
		fake.WaitAsleep()
		returned := h.Stop()
		require.Len(t, returned, 2)
		kept := returned[1]
		returned, task = nil, nil
		assert.True(t, collected(payload))
		runtime.KeepAlive(kept)
	})
	t.Run("returned by Stop off an intake stack", func(t *testing.T) {
		// A task running inline holds the worker while the timeouts are
		// pushed, so that Stop finds them on the intake stack.
		h, fake := newFakeTimer(t, withShards(1))
		entered, release := make(chan struct{}), make(chan struct{})
		mustSchedule(t, h, TaskFunc(func(Timeout) { close(entered); <-release }), 0)
		fake.WaitAsleep()
		fake.Jump(testTick)
		<-entered
		task, payload := payloadTask()
		mustSchedule(t, h, task, time.Hour)
		mustSchedule(t, h, noopTask, time.Hour)
		stopped := make(chan []Timeout)
		go func() { stopped <- h.Stop() }()
		close(release)
		returned := <-stopped
		require.Len(t, returned, 2)
		kept := returned[1]
		returned, task = nil, nil
		assert.True(t, collected(payload))
		runtime.KeepAlive(kept)
	})
}
