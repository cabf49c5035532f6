package pool

import (
	"bytes"
	"context"
	"log/slog"
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
