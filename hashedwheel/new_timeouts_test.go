package hashedwheel

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewTimeoutsRunsEachTaskOnceInOrderAtTheDeadline(t *testing.T) {
	h, fake := newFakeTimer(t)
	var ran []int
	tasks := make([]TimerTask, 5)
	for i := range tasks {
		tasks[i] = &hookTask{onRun: func(Timeout) { ran = append(ran, i) }} // pool.Inline: on the worker, one at a time
	}
	timeouts, err := h.NewTimeouts(3*testTick, tasks...)
	require.NoError(t, err)
	require.Len(t, timeouts, len(tasks))
	for i, to := range timeouts {
		assert.Same(t, tasks[i], to.Task(), "timeouts[%d]", i)
		assert.Equal(t, timeouts[0].Deadline(), to.Deadline(), "one clock read: one deadline")
	}
	assert.Equal(t, int64(5), h.PendingTimeouts())

	advance(fake, 2*testTick)
	assert.Empty(t, ran, "a task ran before its deadline")
	advance(fake, testTick)
	assert.Equal(t, []int{0, 1, 2, 3, 4}, ran, "each once, in the order of the tasks")
	for _, to := range timeouts {
		assert.True(t, to.IsExpired())
	}
	s := h.Stats()
	assert.Equal(t, uint64(5), s.Scheduled)
	assert.Equal(t, uint64(5), s.Expired)
}

func TestNewTimeoutsSchedulesAllOrNone(t *testing.T) {
	h, _ := newFakeTimer(t, WithMaxPendingTimeouts(4))
	three := []TimerTask{noopTask, noopTask, noopTask}

	for _, bad := range []TimerTask{nil, TaskFunc(nil)} {
		timeouts, err := h.NewTimeouts(time.Hour, noopTask, noopTask, bad, noopTask)
		assert.ErrorIs(t, err, ErrNilTask)
		assert.ErrorContains(t, err, "tasks[2]", "the error names the nil task")
		assert.Nil(t, timeouts)
	}
	timeouts, err := h.NewTimeouts(time.Hour)
	assert.NoError(t, err)
	assert.Nil(t, timeouts, "no tasks, no timeouts")
	assert.Zero(t, h.Stats().Scheduled)

	mustSchedule(t, h, noopTask, time.Hour)
	mustSchedule(t, h, noopTask, time.Hour)
	timeouts, err = h.NewTimeouts(time.Hour, three...)
	assert.ErrorIs(t, err, ErrTooManyPendingTimeouts, "3 more than the limit of 4 leaves room for")
	assert.Nil(t, timeouts)
	assert.Equal(t, int64(2), h.PendingTimeouts(), "none of the three is pending")
	assert.Equal(t, uint64(3), h.Stats().RejectedFull, "each refused timeout counts")
	timeouts, err = h.NewTimeouts(time.Hour, three[:2]...)
	require.NoError(t, err)
	assert.Len(t, timeouts, 2)
	assert.Equal(t, int64(4), h.PendingTimeouts())

	h.Stop()
	timeouts, err = h.NewTimeouts(time.Hour, three...)
	assert.ErrorIs(t, err, ErrStopped)
	assert.Nil(t, timeouts)
	assert.Equal(t, uint64(3), h.Stats().RejectedStopped)
}

// A timeout of a batch cancelled while queued is dropped as one made
// alone: the newest, on top of its stack, by the next push; the others when
// the worker takes them.
func TestNewTimeoutsCancelledWhileQueuedAreDropped(t *testing.T) {
	h, _ := newFakeTimer(t)
	timeouts, err := h.NewTimeouts(time.Hour, noopTask, noopTask, noopTask, noopTask)
	require.NoError(t, err)
	assert.True(t, timeouts[1].Cancel())
	assert.True(t, timeouts[3].Cancel())
	after := mustSchedule(t, h, noopTask, time.Hour)

	left := h.Stop()
	assert.ElementsMatch(t, []Timeout{timeouts[0], timeouts[2], after}, left)
	s := h.Stats()
	assert.Equal(t, uint64(5), s.Scheduled)
	assert.Equal(t, uint64(2), s.Cancelled)
	assert.Equal(t, uint64(3), s.ReturnedByStop)
}

// TestNewTimeoutsRacingStopLosesNothing has producers schedule batches and
// cancel some of their timeouts while Stop closes the timer: each timeout
// of an accepted batch runs once, is cancelled or is returned by Stop, and
// no task of a refused batch runs.
func TestNewTimeoutsRacingStopLosesNothing(t *testing.T) {
	raceStopLosesNothing(t, func(h *HashedWheelTimer, i int) ([]racedTimeout, error) {
		raced, tasks := make([]racedTimeout, 1+i%7), make([]TimerTask, 1+i%7)
		for j := range tasks {
			runs := new(atomic.Int32)
			raced[j].runs, tasks[j] = runs, TaskFunc(func(Timeout) { runs.Add(1) })
		}
		timeouts, err := h.NewTimeouts(time.Duration(i%3)*time.Millisecond, tasks...)
		for j, to := range timeouts {
			raced[j].timeout, raced[j].cancelled = to, j%3 == 1 && to.Cancel()
		}
		return raced, err
	})
}
