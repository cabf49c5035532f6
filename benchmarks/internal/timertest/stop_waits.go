package timertest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// stopGrace is how long a Stop that does not wait for a running task is
// given to return, wrongly, before the task is let go. A Stop that waits
// passes however short it is; one that does not is caught unless it takes
// longer than this to return.
const stopGrace = 100 * time.Millisecond

// blocker is a task that reports when it starts, blocks until released and
// records that it returned.
type blocker struct {
	started  chan struct{}
	release  chan struct{}
	returned atomic.Bool
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blocker) Run(hashedwheel.Timeout) {
	close(b.started)
	<-b.release
	b.returned.Store(true)
}

// waitStarted waits for b to start.
func (b *blocker) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-b.started:
	case <-time.After(patience):
		t.Fatalf("the blocking task did not start within %v", patience)
	}
}

// testStopWaitsForTasks stops tm, which runs tasks on a pool, while a task
// runs: Stop returns only after the task has.
func testStopWaitsForTasks(t *testing.T, tm hashedwheel.Timer) {
	b := newBlocker()
	if _, err := tm.NewTimeout(b, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	b.waitStarted(t)
	stopped := make(chan bool, 1) // whether the task had returned when Stop did
	go func() {
		tm.Stop()
		stopped <- b.returned.Load()
	}()
	select {
	case <-stopped:
		close(b.release)
		t.Fatal("Stop returned while a task it had handed to the executor was running")
	case <-time.After(stopGrace):
	}
	close(b.release)
	select {
	case returned := <-stopped:
		if !returned {
			t.Fatal("Stop returned before the running task did")
		}
	case <-time.After(patience):
		t.Fatalf("Stop did not return within %v of the task's", patience)
	}
}

// testStopFromTaskOnExecutor stops tm from a task on its pool while another
// task runs: that Stop neither waits for the other task nor for itself.
func testStopFromTaskOnExecutor(t *testing.T, tm hashedwheel.Timer) {
	b := newBlocker()
	defer close(b.release) // before the timer's cleanup, whose Stop waits for it
	if _, err := tm.NewTimeout(b, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	b.waitStarted(t)
	stopFromTask(t, tm)
}

// stopFromTask schedules a timeout an hour away and a task that stops tm,
// and checks that the task's Stop returns, with the far timeout.
func stopFromTask(t *testing.T, tm hashedwheel.Timer) {
	t.Helper()
	_, longOne := schedule(t, tm, time.Hour, nil)
	stopped := make(chan []hashedwheel.Timeout, 1)
	if _, err := tm.NewTimeout(hashedwheel.TaskFunc(func(hashedwheel.Timeout) {
		stopped <- tm.Stop()
	}), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case rest := <-stopped:
		if len(rest) != 1 || rest[0] != longOne {
			t.Fatalf("Stop from a task returned %d timeouts, want the one pending", len(rest))
		}
	case <-time.After(patience):
		t.Fatalf("Stop called from a task did not return within %v", patience)
	}
}
