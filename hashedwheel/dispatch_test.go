package hashedwheel

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/pool"
)

// TestTasksDueTogetherStartTogether: 1000 timeouts due in the same tick,
// each task blocking for 10ms, all start soon after their deadline, with
// the default pool and with an executor that starts a goroutine per task:
// a slow task holds up no other. Handed over in batches run one task after
// another, the last would start over a second late. Real time is the
// subject; the bound leaves room for a loaded machine.
func TestTasksDueTogetherStartTogether(t *testing.T) {
	const n, bound = slowTasks, 400 * time.Millisecond
	for name, opts := range map[string][]Option{
		"default pool":       nil,
		"goroutine per task": {WithExecutor(goExecutor{})},
	} {
		t.Run(name, func(t *testing.T) {
			h := startTimer(t, append([]Option{WithTickDuration(slowTick)}, opts...)...)
			late := slowTasksLate(t, h)
			assert.GreaterOrEqual(t, late[0], time.Duration(0), "never before the deadline")
			assert.Less(t, late[n-1], bound, "the last task started %v after its deadline (median %v)", late[n-1], late[n/2])
		})
	}
}

// TestASlowTaskHoldsUpNoShortTaskDueWithIt: slow tasks among short ones
// due in the same tick, on the default pool: every short task starts
// within a tick and 10ms of its deadline, as docs/guarantees.md states,
// while the slow ones still run. Real time is the subject: on a machine
// whose cores other work keeps busy, no timer meets that bound, so there
// the short tasks must start within 10ms of the same tasks with no slow
// one beside them, timed just before; and the test tries three times.
// Short tasks held behind slow ones never start until they are released.
func TestASlowTaskHoldsUpNoShortTaskDueWithIt(t *testing.T) {
	const n, slowEvery, tick = 200, 25, 10 * time.Millisecond // 8 slow
	const bound, attempts = tick + 10*time.Millisecond, 3
	var worst []string
	for range attempts {
		alone := shortTasksLateBesideSlowOnes(t, n, 0, tick)
		beside := shortTasksLateBesideSlowOnes(t, n, slowEvery, tick)
		if beside < bound || beside < alone+10*time.Millisecond {
			return
		}
		worst = append(worst, fmt.Sprintf("%v (%v alone)", beside, alone))
	}
	assert.Fail(t, "short tasks held up by slow ones",
		"the latest short task started %v after its deadline, in each of %d runs; bound %v", worst, attempts, bound)
}

// shortTasksLateBesideSlowOnes schedules n tasks due together, every
// slowEvery-th one, if slowEvery is positive, blocking until the others
// have started, and returns how late after its deadline the latest short
// one started.
func shortTasksLateBesideSlowOnes(t *testing.T, n, slowEvery int, tick time.Duration) time.Duration {
	h := startTimer(t, WithTickDuration(tick))
	defer h.Stop()
	release := make(chan struct{})
	defer close(release)
	lateness := make(chan time.Duration, n)
	for i := range n {
		mustSchedule(t, h, TaskFunc(func(to Timeout) {
			if slowEvery > 0 && i%slowEvery == 0 {
				<-release
				return
			}
			lateness <- time.Since(to.Deadline())
		}), 2*tick)
	}
	var worst time.Duration
	short := n
	if slowEvery > 0 {
		short -= n / slowEvery
	}
	for range short {
		select {
		case late := <-lateness:
			require.GreaterOrEqual(t, late, time.Duration(0), "never before the deadline")
			worst = max(worst, late)
		case <-time.After(10 * time.Second):
			require.Fail(t, "short tasks wait behind slow ones")
		}
	}
	return worst
}

// TestStopFromSeveralTasksAtOnce: tasks that call Stop at the same time,
// on a pool, all return, none waiting for another; exactly one gets the
// pending timeouts; a Stop from outside then waits for the tasks.
func TestStopFromSeveralTasksAtOnce(t *testing.T) {
	for name, exec := range map[string]pool.Executor{"default pool": nil, "goroutine per task": goExecutor{}} {
		t.Run(name, func(t *testing.T) {
			var opts []Option
			if exec != nil {
				opts = append(opts, WithExecutor(exec))
			}
			h := startTimer(t, append(opts, WithTickDuration(time.Millisecond))...)
			pending := mustSchedule(t, h, noopTask, time.Hour)
			const n = 8
			results := make(chan []Timeout, n)
			var ready sync.WaitGroup
			ready.Add(n)
			release := make(chan struct{})
			for range n {
				_, err := h.AfterFunc(time.Millisecond, func() {
					ready.Done()
					<-release // all running at once
					results <- h.Stop()
				})
				require.NoError(t, err)
			}
			ready.Wait()
			close(release)
			var got []Timeout
			for range n {
				got = append(got, <-results...)
			}
			assert.Equal(t, []Timeout{pending}, got)
			assert.Nil(t, h.Stop())
			assert.True(t, isClosed(h.worker.dispatcher.Idle()), "the outside Stop waited for the tasks")
		})
	}
}

// TestStopWaitsForTasksOnAnyExecutor: with an executor the timer does not
// own, Stop still returns only once the tasks it handed over have.
func TestStopWaitsForTasksOnAnyExecutor(t *testing.T) {
	h := startTimer(t, WithTickDuration(time.Millisecond), WithExecutor(goExecutor{}))
	release, finished := startHeldTask(t, h)
	stopped := make(chan bool)
	go func() {
		h.Stop()
		stopped <- isClosed(finished)
	}()
	<-h.done
	select {
	case <-stopped:
		require.Fail(t, "Stop returned while a task was running")
	default:
	}
	close(release)
	assert.True(t, <-stopped, "Stop returned before the task did")
}
