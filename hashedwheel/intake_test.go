package hashedwheel

import (
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

// The intake stack is tested alone here, with timeouts that carry their
// producer and sequence number in the deadline, and the test goroutine as
// the worker.

func newTestShard() *shard { return &newShards()[0] }

func intakeItem(producer, seq int) *timeout {
	return &timeout{deadline: int64(producer)<<32 | int64(seq)}
}

func itemOf(t *timeout) (producer, seq int) {
	return int(t.deadline >> 32), int(t.deadline & math.MaxUint32)
}

// appendTaken appends the timeouts of l to buf, oldest first.
func appendTaken(buf []*timeout, l takenList) []*timeout {
	for t := l.pop(); t != nil; t = l.pop() {
		buf = append(buf, t)
	}
	return buf
}

// TestIntakeManyProducers: producers push while the worker takes; nothing
// is lost or taken twice, each producer's timeouts come out in the order it
// pushed them, none keeps a link to another, and pushed(), read
// concurrently, never goes back and never counts more than was pushed.
func TestIntakeManyProducers(t *testing.T) {
	const producers, perProducer = 8, 20_000
	s := newTestShard()
	var accepted atomic.Int64
	wait := racetest.Run(producers, perProducer, func(p, i int) {
		_, ok := s.push(intakeItem(p, i))
		require.True(t, ok)
		accepted.Add(1)
		if i%1000 == 0 {
			runtime.Gosched()
		}
	})
	stopReading := make(chan struct{})
	readerDone := make(chan struct{})
	go func() { // a PendingTimeouts caller
		defer close(readerDone)
		var last uint64
		for {
			select {
			case <-stopReading:
				return
			default:
			}
			n := s.pushed()
			// Each producer may have one push published but not yet counted.
			after := uint64(accepted.Load())
			assert.GreaterOrEqual(t, n, last, "pushed() went back")
			assert.LessOrEqual(t, n, after+producers, "pushed() counts more than was pushed")
			last = n
		}
	}()

	next := make([]int, producers)
	var buf []*timeout
	for got := 0; got < producers*perProducer; {
		buf = appendTaken(buf[:0], s.takeAll())
		if len(buf) == 0 {
			runtime.Gosched()
			continue
		}
		for _, to := range buf {
			require.Nil(t, to.next, "a taken timeout keeps no link")
			p, seq := itemOf(to)
			require.Equal(t, next[p], seq, "producer %d out of order", p)
			next[p]++
		}
		got += len(buf)
	}
	wait()
	close(stopReading)
	<-readerDone
	assert.True(t, s.empty())
	assert.Equal(t, uint64(producers*perProducer), s.pushed())
	assert.Nil(t, s.takeAll().head)
}

// TestIntakeCloseRacingPushes closes the stack while producers push: every
// push that reported success is taken, by a take or by close, exactly once;
// every later push fails; and pushed() is the count of accepted pushes.
func TestIntakeCloseRacingPushes(t *testing.T) {
	for round := 0; round < 50; round++ {
		s := newTestShard()
		start, wait := racetest.Producers(4, func(p, i int) bool {
			_, ok := s.push(intakeItem(p, i))
			return ok
		})
		start()
		var taken []*timeout
		for len(taken) < 1000 {
			taken = appendTaken(taken, s.takeAll())
		}
		taken = appendTaken(taken, s.close())
		accepted := wait()
		_, ok := s.push(intakeItem(0, 0))
		require.False(t, ok, "closed")

		var want, got []int64
		for p, seqs := range accepted {
			for _, seq := range seqs {
				want = append(want, intakeItem(p, seq).deadline)
			}
		}
		for _, to := range taken {
			got = append(got, to.deadline)
		}
		slices.Sort(want)
		slices.Sort(got)
		require.Equal(t, want, got)
		require.Equal(t, uint64(len(want)), s.pushed())
		require.Nil(t, s.takeAll().head)
		require.Nil(t, s.close().head, "a second close takes nothing")
	}
}

// TestIntakeCountWrapsAround: the count a timeout carries is modulo 2³²,
// and pushed() stays exact across the wrap.
func TestIntakeCountWrapsAround(t *testing.T) {
	s := newTestShard()
	const before = math.MaxUint32 - 5 // as if that many were pushed and taken
	s.bottom.seq = uint32(before)
	s.taken.Store(before)
	for i := 0; i < 10; i++ {
		count, ok := s.push(intakeItem(0, i))
		require.True(t, ok)
		assert.Equal(t, uint32(before+i+1), count)
	}
	assert.Equal(t, uint64(before+10), s.pushed())
	assert.Len(t, appendTaken(nil, s.takeAll()), 10)
	assert.Equal(t, uint64(before+10), s.pushed())
	assert.Equal(t, uint64(before+10), s.taken.Load())
}
