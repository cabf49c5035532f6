package hashedwheel

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProducersMeetingOnAStackSpreadTheTimer: a failed push that finds
// another producer's timeout on top makes the timer spread producers by
// processor; one that finds the sentinel of the worker's collect does not.
func TestProducersMeetingOnAStackSpreadTheTimer(t *testing.T) {
	// A timer not started: no worker collects the stack under the test.
	h, err := New(withShards(1))
	require.NoError(t, err)
	s := &h.shards[0]
	require.False(t, h.spreadIfProducersMet(s), "the sentinel on top is the worker's")
	require.False(t, h.spread.Load())

	_, ok := s.push(&timeout{task: noopTask, timer: h})
	require.True(t, ok)
	assert.True(t, h.spreadIfProducersMet(s), "a producer's timeout on top")
	assert.True(t, h.spread.Load())
}

// TestOneProducerKeepsTheTimerOnPages: the timeouts of one goroutine, taken
// in by the worker every wakeEvery pushes, which makes some of its
// compare-and-swaps fail, never make the timer spread by processor.
func TestOneProducerKeepsTheTimerOnPages(t *testing.T) {
	h, fake := newFakeTimer(t, withShards(1))
	n := 4 * wakeEvery
	if testing.Short() {
		n = 2 * wakeEvery
	}
	for range n {
		to := mustSchedule(t, h, noopTask, time.Hour)
		to.Cancel()
	}
	advance(fake, testTick)
	assert.False(t, h.spread.Load())
	assert.Zero(t, h.PendingTimeouts())
}

// TestTimeoutsSpreadByProcessorAllFireOnce: with the timer spreading by
// processor, the timeouts of many producers each fire once, none lost.
func TestTimeoutsSpreadByProcessorAllFireOnce(t *testing.T) {
	const producers, each = 8, 2000
	h, fake := newFakeTimer(t)
	h.spread.Store(true)
	var mu sync.Mutex
	fired := make(map[*timeout]int, producers*each)
	task := TaskFunc(func(to Timeout) {
		mu.Lock()
		fired[to.(*timeout)]++
		mu.Unlock()
	})
	var wg sync.WaitGroup
	made := make([][]Timeout, producers)
	for p := range producers {
		wg.Go(func() {
			for range each {
				to, err := h.NewTimeout(task, testTick)
				if !assert.NoError(t, err) {
					return
				}
				made[p] = append(made[p], to)
			}
		})
	}
	wg.Wait()
	advance(fake, 2*testTick)
	require.Len(t, fired, producers*each)
	for _, tos := range made {
		for _, to := range tos {
			assert.Equal(t, 1, fired[to.(*timeout)])
		}
	}
	assert.Equal(t, uint64(producers*each), h.Stats().Expired)
}
