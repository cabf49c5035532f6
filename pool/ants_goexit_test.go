package pool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAntsSizeHoldsAfterGoexit: tasks that call runtime.Goexit among many,
// executed from several goroutines: the goroutine a Goexit ends frees its
// place for the next task, so no more than size tasks ever run at once,
// and every task runs.
func TestAntsSizeHoldsAfterGoexit(t *testing.T) {
	const size, tasks, exitEvery = 2, 2000, 50
	a, err := NewAnts(size)
	require.NoError(t, err)
	var running, most, ran atomic.Int32
	var wg sync.WaitGroup
	wg.Add(tasks)
	task := func(exit bool) func() {
		return func() {
			defer wg.Done()
			n := running.Add(1)
			defer running.Add(-1)
			ran.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			runtime.Gosched() // room for a task run beside it to start
			if exit {
				runtime.Goexit()
			}
		}
	}
	var producers sync.WaitGroup
	for p := range 4 {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for i := range tasks / 4 {
				assert.NoError(t, a.Execute(task((p*tasks/4+i)%exitEvery == 0)))
			}
		}()
	}
	producers.Wait()
	wg.Wait()
	releaseAndWait(t, a)
	assert.Equal(t, int32(tasks), ran.Load(), "tasks run")
	assert.LessOrEqual(t, most.Load(), int32(size), "tasks running at once")
}
