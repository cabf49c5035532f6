package lateness

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRecordFromManyGoroutinesKeepsEveryDuration records distinct
// durations from more goroutines than processors, with collections in
// between, which empty the pool, and checks that Count, Max and Sorted
// account for every one of them.
func TestRecordFromManyGoroutinesKeepsEveryDuration(t *testing.T) {
	const goroutines, each = 32, 2000
	r := New()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				r.Record(time.Duration(g*each + i))
				if i%500 == 0 {
					runtime.GC()
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(goroutines*each), r.Count())
	worst, ok := r.Max()
	require.True(t, ok)
	assert.Equal(t, time.Duration(goroutines*each-1), worst)
	all := r.Sorted()
	require.Len(t, all, goroutines*each)
	for i, d := range all {
		require.Equal(t, time.Duration(i), d, "each duration once, in order")
	}
}

// TestWaitReturnsOnceEveryDurationIsRecorded waits for records made by
// another goroutine after Wait began, and gives up when done is closed
// before enough were.
func TestWaitReturnsOnceEveryDurationIsRecorded(t *testing.T) {
	r := New()
	go func() {
		for i := range 10 {
			r.Record(time.Duration(i))
		}
	}()
	require.True(t, r.Wait(context.Background(), 10))
	assert.Len(t, r.Sorted(), 10)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, r.Wait(ctx, 11), "an eleventh is never recorded")
	_, ok := New().Max()
	assert.False(t, ok, "no maximum before the first record")
}

// TestReleaseWhileRecording releases a recorder while goroutines still
// record into it, as an abandoned run does: under the race detector this
// fails if Release wrote what a recording goroutine writes; and what is
// recorded afterwards is not counted.
func TestReleaseWhileRecording(t *testing.T) {
	r := New()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 3 * chunkLen {
				r.Record(time.Duration(i))
			}
		})
	}
	r.Release()
	wg.Wait()
	before := r.Count()
	r.Release()
	r.Record(time.Second)
	assert.LessOrEqual(t, r.Count(), before, "nothing counted after a release")
	assert.LessOrEqual(t, int64(len(r.Sorted())), before)
}
