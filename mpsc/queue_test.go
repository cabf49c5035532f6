package mpsc

import (
	"runtime"
	"slices"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func popAll[T any](q *Queue[T]) []T {
	var out []T
	for {
		v, ok := q.Pop()
		if !ok {
			return out
		}
		out = append(out, *v)
	}
}

func ptr[T any](v T) *T { return &v }

func TestFIFOAcrossChunks(t *testing.T) {
	q := New[int]()
	assert.True(t, q.Empty())
	_, ok := q.Pop()
	assert.False(t, ok)
	const n = 5*chunkSize + 3
	for i := 0; i < n; i++ {
		index, ok := q.Push(ptr(i))
		require.True(t, ok)
		require.Equal(t, uint64(i), index, "the index counts the values accepted before")
		if i%7 == 6 { // interleave pops with pushes
			v, ok := q.Pop()
			require.True(t, ok)
			require.Equal(t, i-6-(i/7)*6, *v)
		}
	}
	assert.Equal(t, uint64(n), q.Pushed())
	rest := popAll(q)
	require.Len(t, rest, n-n/7)
	for i := 1; i < len(rest); i++ {
		require.Less(t, rest[i-1], rest[i])
	}
	assert.Equal(t, n-1, rest[len(rest)-1])
	assert.True(t, q.Empty())
}

// TestManyProducers pushes from many goroutines while the consumer pops:
// nothing is lost or duplicated, and each producer's values come out in the
// order it pushed them.
func TestManyProducers(t *testing.T) {
	const producers = 8
	perProducer := 20_000
	if testing.Short() {
		perProducer = 2_000
	}
	type item struct{ producer, seq int }
	q := New[item]()
	wait := racetest.Run(producers, perProducer, func(p, i int) {
		q.Push(&item{p, i})
		if i%1000 == 0 {
			runtime.Gosched()
		}
	})
	next := make([]int, producers)
	for got := 0; got < producers*perProducer; {
		v, ok := q.Pop()
		if !ok {
			runtime.Gosched()
			continue
		}
		require.Equal(t, next[v.producer], v.seq, "producer %d out of order", v.producer)
		next[v.producer]++
		got++
	}
	wait()
	assert.True(t, q.Empty())
	_, ok := q.Pop()
	assert.False(t, ok, "nothing extra")
	assert.Equal(t, uint64(producers*perProducer), q.Pushed())
}

func TestCloseRejectsLaterPushes(t *testing.T) {
	q := New[string]()
	_, ok := q.Push(ptr("a"))
	require.True(t, ok)
	_, ok = q.Push(nil)
	assert.False(t, ok, "nil is refused")
	q.Close()
	q.Close() // no effect
	_, ok = q.Push(ptr("b"))
	assert.False(t, ok)
	assert.False(t, q.Empty(), "a is still there")
	assert.Equal(t, uint64(1), q.Pushed(), "failed pushes are not counted")
	assert.Equal(t, []string{"a"}, popAll(q))
	assert.True(t, q.Empty())
}

// TestCloseRacingPushes closes the queue while producers push: every push
// that reported success is delivered, and no other, and the accepted pushes
// hold the indexes 0 to n-1, each once.
func TestCloseRacingPushes(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 5
	}
	for round := 0; round < rounds; round++ {
		q := New[int]()
		const producers = 4
		indexes := make([][]int, producers)
		start, wait := racetest.Producers(producers, func(p, i int) bool {
			index, ok := q.Push(ptr(p + i*producers))
			if ok {
				indexes[p] = append(indexes[p], int(index))
			}
			return ok
		})
		start()
		var popped []int
		for len(popped) < 1000 {
			if v, ok := q.Pop(); ok {
				popped = append(popped, *v)
			}
		}
		q.Close()
		for !q.Empty() { // drain, waiting for pushes in progress
			if v, ok := q.Pop(); ok {
				popped = append(popped, *v)
			} else {
				runtime.Gosched()
			}
		}
		var want, gotIndexes []int
		for p, seqs := range wait() {
			for _, i := range seqs {
				want = append(want, p+i*producers)
			}
			gotIndexes = append(gotIndexes, indexes[p]...)
		}
		slices.Sort(want)
		slices.Sort(popped)
		require.Equal(t, want, popped)
		require.Equal(t, uint64(len(want)), q.Pushed())
		slices.Sort(gotIndexes)
		for i, index := range gotIndexes {
			require.Equal(t, i, index, "indexes of accepted pushes are 0 to n-1, each once")
		}
		_, ok := q.Pop()
		require.False(t, ok)
	}
}

// TestPoppedValuesAreReleasedWithTheirChunk: popped values stay in their
// slots only until both sides have moved past the chunk.
func TestPoppedValuesAreReleasedWithTheirChunk(t *testing.T) {
	q := New[int]()
	first := q.headChunk
	for i := 0; i < chunkSize+1; i++ {
		q.Push(ptr(i))
		_, ok := q.Pop()
		require.True(t, ok)
	}
	assert.NotSame(t, first, q.headChunk, "the consumer left the first chunk")
	assert.NotSame(t, first, q.tailChunk.Load(), "the producers left it too: nothing references it")
}

func TestPushAllocatesOnlyPerChunk(t *testing.T) {
	q := New[int]()
	v := new(int)
	allocs := testing.AllocsPerRun(chunkSize*10, func() {
		q.Push(v)
		q.Pop()
	})
	assert.LessOrEqual(t, allocs, 2.0/chunkSize*2, "one chunk per chunkSize pushes")
}

// TestPushReusesTheChunkTheConsumerLeft: while the consumer keeps up, the
// producers link the chunk it left last instead of a new one, so pushes
// allocate nothing, counted over many chunks rather than rounded per push.
func TestPushReusesTheChunkTheConsumerLeft(t *testing.T) {
	q := New[int]()
	v := new(int)
	cycle := func() {
		for range 3 * chunkSize {
			q.Push(v)
			q.Push(v)
			q.Pop()
			q.Pop()
		}
	}
	cycle() // the queue has its chunks
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 1000 {
		cycle()
	}
	runtime.ReadMemStats(&after)
	// A few allocations of the runtime's own may fall in the window; one
	// chunk per chunkSize pushes would be 6000.
	assert.Less(t, after.Mallocs-before.Mallocs, uint64(20), "allocations in %d pushes", 1000*6*chunkSize)
	assert.True(t, q.Empty())
}

// TestPopKeepsNothingAlive: once popped, a value is not kept alive by the
// queue, even while its chunk is still in use.
func TestPopKeepsNothingAlive(t *testing.T) {
	q := New[[1 << 16]byte]()
	v := new([1 << 16]byte)
	w := weak.Make(v)
	q.Push(v)
	q.Push(new([1 << 16]byte)) // the chunk stays in use
	got, ok := q.Pop()
	require.True(t, ok)
	require.Same(t, v, got)
	v, got = nil, nil
	runtime.GC()
	runtime.GC()
	assert.Nil(t, w.Value(), "the popped value is still reachable from the queue")
	runtime.KeepAlive(q)
}

// TestProducersHoldingRetiredChunks: producers that stop between loading
// the tail chunk and claiming their index, while a consumer close behind
// them retires and reuses chunks, still put every value in its place:
// nothing lost, duplicated or out of a producer's order.
func TestProducersHoldingRetiredChunks(t *testing.T) {
	const producers = 6
	perProducer := 30_000
	if testing.Short() {
		perProducer = 3_000
	}
	type item struct{ producer, seq int }
	q := New[item]()
	wait := racetest.Run(producers, perProducer, func(p, i int) {
		q.Push(&item{p, i})
		if (i+p)%5 == 0 {
			runtime.Gosched()
		}
	})
	next := make([]int, producers)
	for got := 0; got < producers*perProducer; {
		v, ok := q.Pop()
		if !ok {
			continue // spin: stay close behind the producers
		}
		require.Equal(t, next[v.producer], v.seq, "producer %d out of order", v.producer)
		next[v.producer]++
		got++
	}
	wait()
	assert.True(t, q.Empty())
	assert.Equal(t, uint64(producers*perProducer), q.Pushed())
}

// TestAProducerHoldingARetiredChunkFindsItsOwn: a producer that loaded the
// tail chunk, then stopped while the consumer left that chunk, which was
// kept for reuse and then reused for later indexes, puts its value in its
// own place, popped in order.
func TestAProducerHoldingARetiredChunkFindsItsOwn(t *testing.T) {
	for _, lap := range []int{1, 2, 3, 10} { // chunks the queue moves on meanwhile
		q := New[int]()
		stale := q.tailChunk.Load()
		for i := range lap*chunkSize + 1 { // the consumer leaves the stale chunk
			q.Push(ptr(i))
			got, ok := q.Pop()
			require.True(t, ok)
			require.Equal(t, i, *got)
		}
		require.NotEqual(t, uint64(0), stale.base.Load(), "the chunk was not retired")
		q.tailChunk.Store(stale) // as a producer that loaded it before it was retired
		index, ok := q.Push(ptr(lap))
		require.True(t, ok)
		assert.Equal(t, uint64(lap*chunkSize+1), index)
		q.Push(ptr(-2))
		assert.Equal(t, []int{lap, -2}, popAll(q), "lap %d", lap)
	}
}
