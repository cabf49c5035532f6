package pool

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// waitBound bounds every wait for work on other goroutines: far more than
// the work needs, so that a lost task fails the test instead of hanging it.
const waitBound = 10 * time.Second

// releaseAndWait releases a and waits until its goroutines have exited.
func releaseAndWait(tb testing.TB, a *Ants) {
	tb.Helper()
	require.NoError(tb, a.p.ReleaseContext(context.Background()))
}

func TestInlineRunsOnTheCaller(t *testing.T) {
	ran := false
	require.NoError(t, Inline.Execute(func() { ran = true }))
	assert.True(t, ran, "ran before Execute returned")
}

func TestNewAntsValidatesSize(t *testing.T) {
	_, err := NewAnts(-1)
	assert.ErrorContains(t, err, "NewAnts(-1)")
	a, err := NewAnts(0)
	require.NoError(t, err)
	defer releaseAndWait(t, a)
	assert.Equal(t, 1024, a.Cap(), "size 0: the size of a timer's own pool")
	b, err := NewAnts(3)
	require.NoError(t, err)
	defer releaseAndWait(t, b)
	assert.Equal(t, 3, b.Cap())
}

func TestAntsRunsEveryTask(t *testing.T) {
	a, err := NewAnts(4)
	require.NoError(t, err)
	defer releaseAndWait(t, a)
	var wg sync.WaitGroup
	var ran atomic.Int32
	for range 1000 {
		wg.Add(1)
		require.NoError(t, a.Execute(func() { ran.Add(1); wg.Done() }))
	}
	wg.Wait()
	assert.Equal(t, int32(1000), ran.Load())
}

// TestAntsExecuteQueuesWhenFull: on a pool of one goroutine held by a
// task, Execute returns at once, and the queued tasks run, in the order
// they were given, once the goroutine frees up.
func TestAntsExecuteQueuesWhenFull(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	defer releaseAndWait(t, a)
	release, started := make(chan struct{}), make(chan struct{})
	require.NoError(t, a.Execute(func() { close(started); <-release }))
	<-started
	ran := make(chan int, 3)
	for i := range 3 {
		require.NoError(t, a.Execute(func() { ran <- i }), "Execute while the goroutine is held")
	}
	close(release)
	for i := range 3 {
		select {
		case got := <-ran:
			assert.Equal(t, i, got, "the queue's order")
		case <-time.After(waitBound):
			require.Fail(t, "an accepted task never ran")
		}
	}
}

// TestAntsTasksHandingFollowUpWorkToTheirOwnFullPoolFinish: every task on
// a pool of two goroutines hands the pool a job of its own, a timeout that
// enqueues its cleanup: each Execute returns at once, the tasks return,
// and the jobs then run. A pool whose Execute waited for a goroutine would
// hold both tasks forever.
func TestAntsTasksHandingFollowUpWorkToTheirOwnFullPoolFinish(t *testing.T) {
	a, err := NewAnts(2)
	require.NoError(t, err)
	defer releaseAndWait(t, a)
	var both sync.WaitGroup
	both.Add(2)
	jobs := make(chan struct{}, 2)
	for range 2 {
		require.NoError(t, a.Execute(func() {
			both.Done()
			both.Wait() // both goroutines held
			assert.NoError(t, a.Execute(func() { jobs <- struct{}{} }))
		}))
	}
	for range 2 {
		select {
		case <-jobs:
		case <-time.After(waitBound):
			require.Fail(t, "a task waited for the goroutine it held")
		}
	}
}

// TestAntsPanicEndsOnlyItsGoroutine: a panicking task is logged, with its
// stack, to slog.Default(), and the pool runs the tasks after it.
func TestAntsPanicEndsOnlyItsGoroutine(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil)))
	a, err := NewAnts(1)
	require.NoError(t, err)
	require.NoError(t, a.Execute(func() { panicInATask() }))
	done := make(chan struct{})
	require.NoError(t, a.Execute(func() { close(done) }))
	select {
	case <-done:
	case <-time.After(waitBound):
		require.Fail(t, "the task after a panic never ran")
	}
	releaseAndWait(t, a)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, buf.String(), "task panicked")
	assert.Contains(t, buf.String(), "panic=boom")
	assert.Contains(t, buf.String(), "panicInATask", "the stack")
}

//go:noinline
func panicInATask() { panic("boom") }

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestAntsReleaseRefusesNewTasksButFinishesRunning: after Release, Execute
// fails; a task running at the time runs to its end.
func TestAntsReleaseRefusesNewTasksButFinishesRunning(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	release, started, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	require.NoError(t, a.Execute(func() { close(started); <-release; close(done) }))
	<-started
	a.Release()
	a.Release() // idempotent
	assert.Error(t, a.Execute(func() {}), "Execute after Release")
	close(release)
	select {
	case <-done:
	case <-time.After(waitBound):
		require.Fail(t, "a running task was cut short by Release")
	}
	releaseAndWait(t, a)
}

func TestAntsRefusesNil(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	defer releaseAndWait(t, a)
	assert.Error(t, a.Execute(nil))
}

// TestAntsNeverRunsMoreThanItsSize: many goroutines executing at once never
// get more than size tasks running together, and every task runs.
func TestAntsNeverRunsMoreThanItsSize(t *testing.T) {
	const size, tasks = 3, 2000
	a, err := NewAnts(size)
	require.NoError(t, err)
	var running, most atomic.Int32
	var wg sync.WaitGroup
	wg.Add(tasks)
	task := func() {
		defer wg.Done()
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		runtime.Gosched()
		running.Add(-1)
	}
	var producers sync.WaitGroup
	for range 4 {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for range tasks / 4 {
				assert.NoError(t, a.Execute(task))
			}
		}()
	}
	producers.Wait()
	wg.Wait()
	releaseAndWait(t, a)
	assert.LessOrEqual(t, most.Load(), int32(size))
}

// TestAntsTaskCallingGoexitEndsOnlyItsGoroutine: a task that calls
// runtime.Goexit, as t.FailNow does, ends its own goroutine and no more:
// the tasks executed after it run, and the pool releases cleanly.
func TestAntsTaskCallingGoexitEndsOnlyItsGoroutine(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	hold := make(chan struct{})
	require.NoError(t, a.Execute(func() { <-hold; runtime.Goexit() }))
	var ran atomic.Int32
	executed := make(chan struct{})
	go func() {
		defer close(executed)
		for range 10 {
			assert.NoError(t, a.Execute(func() { ran.Add(1) }))
		}
	}()
	close(hold)
	select {
	case <-executed:
	case <-time.After(waitBound):
		require.Fail(t, "Execute waits forever after a task called runtime.Goexit")
	}
	releaseAndWait(t, a)
	assert.Equal(t, int32(10), ran.Load(), "the tasks after it ran")
}
