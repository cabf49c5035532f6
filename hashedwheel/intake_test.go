package hashedwheel

import (
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

// The intake stack is tested alone here, with timeouts that carry their
// producer and sequence number, and the test goroutine as the worker.

func newTestShard() *shard { return &newShards(1)[0] }

// intakeItem returns a queued timeout that carries its producer and
// sequence number in its period field, which the intake never reads.
func intakeItem(producer, seq int) *timeout {
	return &timeout{timer: &intakeTimer, period: int64(producer)<<32 | int64(seq)}
}

// intakeTimer is the timer of the intake items, never started: it counts
// their cancellations.
var intakeTimer HashedWheelTimer

func itemOf(t *timeout) (producer, seq int) {
	return int(t.period >> 32), int(t.period & math.MaxUint32)
}

// intakeBatch is what collect or close took off a stack: its list and the
// number of timeouts later pushes unlinked.
type intakeBatch struct {
	head     *timeout
	unlinked int
}

func batch(head, _ *timeout, unlinked int) intakeBatch { return intakeBatch{head, unlinked} }

// pop removes and returns the oldest timeout, or nil.
func (b *intakeBatch) pop() *timeout {
	t := b.head
	if t != nil {
		b.head, t.next = t.next, nil
	}
	return t
}

// push pushes t onto s until it is pushed or s is closed, as pushTimeouts
// does on a timer of this one shard, and returns the shard's count of
// pushes and whether t was pushed.
func (s *shard) push(t *timeout) (uint32, bool) {
	h := HashedWheelTimer{shards: unsafe.Slice(s, 1)}
	count, _, _, ok := h.pushTimeouts(t, t, 1)
	return count, ok
}

// appendCollected appends the timeouts of b to buf, oldest first.
func appendCollected(buf []*timeout, b intakeBatch) []*timeout {
	for t := b.pop(); t != nil; t = b.pop() {
		buf = append(buf, t)
	}
	return buf
}

// TestIntakeManyProducers: producers push while the worker takes; nothing
// is lost or taken twice, each producer's timeouts come out in the order it
// pushed them, none keeps a link to another, and pushed(), read
// concurrently, never goes back and never counts more than was pushed.
func TestIntakeManyProducers(t *testing.T) {
	const producers = 8
	perProducer := 20_000
	if testing.Short() {
		perProducer = 2_000
	}
	s := newTestShard()
	var accepted atomic.Int64
	wait := racetest.Run(producers, perProducer, func(p, i int) {
		_, ok := s.push(intakeItem(p, i))
		if !assert.True(t, ok, "push onto an open stack") { // a producer's goroutine: no require
			return
		}
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
	for got := 0; got < producers*perProducer && !t.Failed(); { // a failed push never comes
		buf = appendCollected(buf[:0], batch(s.take(false)))
		if len(buf) == 0 {
			runtime.Gosched()
			continue
		}
		for _, to := range buf {
			require.Nil(t, to.next, "a collected timeout keeps no link to the next")
			p, seq := itemOf(to)
			require.Equal(t, next[p], seq, "producer %d out of order", p)
			next[p]++
		}
		got += len(buf)
	}
	wait()
	close(stopReading)
	<-readerDone
	assert.Same(t, s.bottom, s.top.Load(), "empty")
	assert.Equal(t, uint64(producers*perProducer), s.pushed())
	assert.Nil(t, batch(s.take(false)).head)
}

// TestIntakeCloseRacingPushes closes the stack while producers push: every
// push that reported success is taken, by a take or by close, exactly once;
// every later push fails; and pushed() is the count of accepted pushes.
func TestIntakeCloseRacingPushes(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 5
	}
	for round := 0; round < rounds; round++ {
		s := newTestShard()
		start, wait := racetest.Producers(4, func(p, i int) bool {
			_, ok := s.push(intakeItem(p, i))
			return ok
		})
		start()
		var taken []*timeout
		for len(taken) < 1000 {
			taken = appendCollected(taken, batch(s.take(false)))
		}
		taken = appendCollected(taken, batch(s.take(true)))
		accepted := wait()
		_, ok := s.push(intakeItem(0, 0))
		require.False(t, ok, "closed")

		var want, got []int64
		for p, seqs := range accepted {
			for _, seq := range seqs {
				want = append(want, intakeItem(p, seq).period)
			}
		}
		for _, to := range taken {
			got = append(got, to.period)
		}
		slices.Sort(want)
		slices.Sort(got)
		require.Equal(t, want, got)
		require.Equal(t, uint64(len(want)), s.pushed())
		require.Nil(t, batch(s.take(false)).head)
		require.Nil(t, batch(s.take(true)).head, "a second close takes nothing")
	}
}

// TestIntakeCountWrapsAround: the count a timeout carries is modulo 2³²,
// and pushed() stays exact across the wrap.
func TestIntakeCountWrapsAround(t *testing.T) {
	s := newTestShard()
	const before = math.MaxUint32 - 5 // as if that many were pushed and taken
	s.bottom.seq = uint32(before)
	s.collected.Store(before)
	for i := 0; i < 10; i++ {
		count, ok := s.push(intakeItem(0, i))
		require.True(t, ok)
		assert.Equal(t, uint32(before+i+1), count)
	}
	assert.Equal(t, uint64(before+10), s.pushed())
	assert.Len(t, appendCollected(nil, batch(s.take(false))), 10)
	assert.Equal(t, uint64(before+10), s.pushed())
	assert.Equal(t, uint64(before+10), s.collected.Load())
}

// cancelQueued cancels t, which is queued and on no timer, as Cancel
// does.
func cancelQueued(tb testing.TB, t *timeout) {
	tb.Helper()
	w := t.word.Load()
	require.Equal(tb, stateQueued, w&stateMask)
	require.True(tb, t.word.CompareAndSwap(w, w&^stateMask|stateCancelled))
}

// TestIntakePushUnlinksCancelledTop: a push onto a timeout cancelled while
// queued links past it, so the worker finds only the live timeouts and
// counts the unlinked one; pushed() still counts every push. A cancelled
// timeout below the top, or one with a Cancelled hook, stays for the
// worker.
func TestIntakePushUnlinksCancelledTop(t *testing.T) {
	s := newTestShard()
	push := func(to *timeout) *timeout {
		_, ok := s.push(to)
		require.True(t, ok)
		return to
	}
	a := push(intakeItem(0, 0))
	b := push(intakeItem(0, 1))
	cancelQueued(t, b)
	c := push(intakeItem(0, 2))
	assert.Same(t, a, c.prev, "c links past the cancelled b")
	assert.Nil(t, b.below(), "b, kept by its caller, keeps nothing below it alive")

	cancelQueued(t, a) // below the top: found by the worker
	hooked := push(&timeout{task: &hookTask{}})
	cancelQueued(t, hooked)
	d := push(intakeItem(0, 3))
	assert.Same(t, hooked, d.prev, "a timeout with a hook is left for the worker")

	taken := batch(s.take(false))
	assert.Equal(t, 1, taken.unlinked)
	assert.Equal(t, []*timeout{a, c, hooked, d}, appendCollected(nil, taken))
	assert.Equal(t, uint64(5), s.pushed())
	assert.Equal(t, uint64(5), s.collected.Load())

	// The cancelled top of a taken stack is the bottom's no longer: a push
	// after the take links to the new sentinel.
	e := push(intakeItem(0, 4))
	cancelQueued(t, e)
	f := push(intakeItem(0, 5))
	assert.Same(t, s.bottom, f.prev)
	taken = batch(s.take(false))
	assert.Equal(t, 1, taken.unlinked)
	assert.Equal(t, []*timeout{f}, appendCollected(nil, taken))
	assert.Equal(t, uint64(7), s.pushed())
}

// TestIntakeCancelRacingTakes: producers push and cancel at once about half
// of what they push, while the worker takes; every timeout not cancelled
// is taken once, in its producer's order, and the timeouts taken plus those
// unlinked by pushes are exactly those pushed.
func TestIntakeCancelRacingTakes(t *testing.T) {
	const producers, perProducer = 4, 20_000
	s := newTestShard()
	wait := racetest.Run(producers, perProducer, func(p, i int) {
		to := intakeItem(p, i)
		_, ok := s.push(to)
		if !assert.True(t, ok, "push onto an open stack") { // a producer's goroutine: no require
			return
		}
		if i%2 == 1 {
			// It races with the worker taking it: either may win.
			to.Cancel()
		}
		if i%1000 == 0 {
			runtime.Gosched()
		}
	})
	next := make([]int, producers)
	found, unlinked := 0, 0
	take := func() int {
		taken := batch(s.take(false))
		unlinked += taken.unlinked
		n := 0
		for to := taken.pop(); to != nil; to = taken.pop() {
			n++
			if to.currentState() == stateCancelled {
				to.forgetBelow() // as the worker does, racing with under
			}
			p, seq := itemOf(to)
			require.GreaterOrEqual(t, seq, next[p], "producer %d out of order", p)
			for ; next[p] < seq; next[p]++ {
				require.Equal(t, 1, next[p]%2, "live timeout %d of producer %d never taken", next[p], p)
			}
			next[p]++
		}
		found += n
		return n
	}
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			if take() == 0 {
				runtime.Gosched()
			}
		}
	}
	take()
	assert.Equal(t, producers*perProducer, found+unlinked)
	assert.Positive(t, unlinked, "pushes unlinked cancelled timeouts")
	assert.Equal(t, uint64(producers*perProducer), s.pushed())
}

// TestTimeoutIsOneCacheLine: a timeout, which is also the node of its
// intake stack and of its bucket list, takes one 64-byte allocation.
func TestTimeoutIsOneCacheLine(t *testing.T) {
	assert.Equal(t, uintptr(64), unsafe.Sizeof(timeout{}))
}
