package lateness

import (
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
	r := New(goroutines * each)
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
	r := New(10)
	never := make(chan struct{})
	go func() {
		for i := range 10 {
			r.Record(time.Duration(i))
		}
	}()
	require.True(t, r.Wait(10, never))
	assert.Len(t, r.Sorted(), 10)

	done := make(chan struct{})
	close(done)
	assert.False(t, r.Wait(11, done), "an eleventh is never recorded")
	_, ok := New(1).Max()
	assert.False(t, ok, "no maximum before the first record")
}
