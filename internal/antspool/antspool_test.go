package antspool

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func TestNewRefusesASizeBelowOne(t *testing.T) {
	_, err := New(0)
	assert.ErrorContains(t, err, "pool of 0 goroutines")
	p, err := New(2)
	require.NoError(t, err)
	assert.Equal(t, 2, p.Cap())
	require.NoError(t, p.ReleaseContext(context.Background()))
}

// TestReleaseContextWaitsForRunningTasks: ReleaseContext is bounded by its
// context while a task runs; once it returns nil the task has returned,
// and Execute, then and since Release, fails with ErrReleased.
func TestReleaseContextWaitsForRunningTasks(t *testing.T) {
	p, err := New(1)
	require.NoError(t, err)
	release, started := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	require.NoError(t, p.Execute(func() { close(started); <-release; finished.Store(true) }))
	<-started
	p.Release()
	assert.ErrorIs(t, p.Execute(func() {}), ErrReleased, "after Release")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, p.ReleaseContext(ctx), context.Canceled, "bounded by ctx")
	close(release)
	require.NoError(t, p.ReleaseContext(context.Background()))
	assert.True(t, finished.Load(), "the running task returned before ReleaseContext did")
	assert.ErrorIs(t, p.Execute(func() {}), ErrReleased)
}
