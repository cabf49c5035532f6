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
	defer a.Release()
	assert.Equal(t, DefaultSize, a.pool.Cap())
}

func TestAntsRunsEveryTask(t *testing.T) {
	a, err := NewAnts(4)
	require.NoError(t, err)
	defer a.Release()
	var wg sync.WaitGroup
	var ran atomic.Int32
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		require.NoError(t, a.Execute(func() { ran.Add(1); wg.Done() }))
	}
	wg.Wait()
	assert.Equal(t, int32(1000), ran.Load())
}

// TestAntsSaturatedNeverBlocksNorDrops fills a one-goroutine pool with a
// blocked task: Execute keeps returning at once, and the backlog runs in
// order once the pool frees up.
func TestAntsSaturatedNeverBlocksNorDrops(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	defer a.Release()
	release := make(chan struct{})
	started := make(chan struct{})
	require.NoError(t, a.Execute(func() { close(started); <-release }))
	<-started

	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		require.NoError(t, a.Execute(func() {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			wg.Done()
		}), "Execute must not fail or block when saturated")
	}
	close(release)
	wg.Wait()
	require.Len(t, order, 100)
	// While the backlog existed every task queued behind it, so all ran in
	// the backlog, in order.
	for i := range order {
		assert.Equal(t, i, order[i])
	}
}

func TestAntsBacklogSurvivesAPanic(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	defer a.Release()
	release := make(chan struct{})
	started := make(chan struct{})
	require.NoError(t, a.Execute(func() { close(started); <-release }))
	<-started
	done := make(chan struct{})
	require.NoError(t, a.Execute(func() { panic("boom") }))
	require.NoError(t, a.Execute(func() { close(done) }))
	assert.LessOrEqual(t, a.Backlog(), 2)
	close(release)
	<-done
}

func TestAntsReleaseRefusesNewTasksButRunsAccepted(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	release := make(chan struct{})
	started := make(chan struct{})
	require.NoError(t, a.Execute(func() { close(started); <-release }))
	<-started
	done := make(chan struct{})
	require.NoError(t, a.Execute(func() { close(done) })) // in the backlog
	a.Release()
	a.Release() // idempotent
	assert.ErrorIs(t, a.Execute(func() {}), ErrClosed)
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an accepted task was dropped by Release")
	}
}

func TestAntsRefusesNil(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	defer a.Release()
	assert.Error(t, a.Execute(nil))
}

// TestAntsLogsPanicsWithTheirStackToItsLogger.
func TestAntsLogsPanicsWithTheirStackToItsLogger(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	a, err := NewAnts(1, WithLogger(logger))
	require.NoError(t, err)
	done := make(chan struct{})
	require.NoError(t, a.Execute(func() {
		defer close(done)
		panic("boom")
	}))
	<-done
	require.NoError(t, a.ReleaseContext(context.Background()))
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, buf.String(), "task panicked")
	assert.Contains(t, buf.String(), "panic=boom")
	assert.Contains(t, buf.String(), "TestAntsLogsPanicsWithTheirStackToItsLogger", "the stack")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestAntsReleaseContextWaitsForTasks: once ReleaseContext returns nil,
// every accepted task, backlog included, has returned.
func TestAntsReleaseContextWaitsForTasks(t *testing.T) {
	a, err := NewAnts(1)
	require.NoError(t, err)
	assert.Equal(t, 1, a.Cap())
	release := make(chan struct{})
	started := make(chan struct{})
	var finished atomic.Int32
	require.NoError(t, a.Execute(func() { close(started); <-release; finished.Add(1) }))
	<-started
	require.NoError(t, a.Execute(func() { finished.Add(1) })) // in the backlog
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, a.ReleaseContext(ctx), context.Canceled, "bounded by ctx")
	close(release)
	require.NoError(t, a.ReleaseContext(context.Background()))
	assert.Equal(t, int32(2), finished.Load())
	assert.ErrorIs(t, a.Execute(func() {}), ErrClosed)
}

// TestAntsIdleGoroutineTakesANewTaskWhileTheBacklogRuns: once the pool has
// been saturated, a slow task taken from the backlog holds only its own
// goroutine; a task executed later starts on an idle one at once.
func TestAntsIdleGoroutineTakesANewTaskWhileTheBacklogRuns(t *testing.T) {
	a, err := NewAnts(2)
	require.NoError(t, err)
	defer a.Release()
	holdA, holdB, holdSlow := make(chan struct{}), make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 3)
	require.NoError(t, a.Execute(func() { started <- struct{}{}; <-holdA }))
	require.NoError(t, a.Execute(func() { started <- struct{}{}; <-holdB }))
	<-started
	<-started
	require.NoError(t, a.Execute(func() { started <- struct{}{}; <-holdSlow }))
	assert.Equal(t, 1, a.Backlog(), "the pool is full: the slow task waits")
	close(holdA)
	close(holdB)
	<-started // the slow task runs, on a pool goroutine; the other is idle
	defer close(holdSlow)

	short := make(chan struct{})
	require.NoError(t, a.Execute(func() { close(short) }))
	select {
	case <-short:
	case <-time.After(10 * time.Second):
		t.Fatal("a short task waited behind the slow one with a pool goroutine idle")
	}
	assert.LessOrEqual(t, a.Running(), 2)
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
	require.NoError(t, a.ReleaseContext(context.Background()))
	assert.LessOrEqual(t, most.Load(), int32(size))
	assert.Zero(t, a.Backlog())
}

// TestAntsTaskCallingGoexitEndsOnlyItsGoroutine: a task that calls
// runtime.Goexit, as t.FailNow does, ends its own goroutine and no more:
// the backlog behind it runs, it is logged, and Release finds nothing
// left running.
func TestAntsTaskCallingGoexitEndsOnlyItsGoroutine(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	a, err := NewAnts(1, WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))))
	require.NoError(t, err)
	hold := make(chan struct{})
	require.NoError(t, a.Execute(func() { <-hold; runtime.Goexit() }))
	var ran atomic.Int32
	for range 10 {
		require.NoError(t, a.Execute(func() { ran.Add(1) }))
	}
	close(hold)
	require.NoError(t, a.ReleaseContext(context.Background()))
	assert.Equal(t, int32(10), ran.Load(), "the backlog behind the task ran")
	assert.Zero(t, a.Running())
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, buf.String(), "runtime.Goexit")
}
