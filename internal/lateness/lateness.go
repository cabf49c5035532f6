// Package lateness records figures, such as how late each task of an
// expiry storm ran, from many goroutines at once without a write that two
// of them share: each records into a buffer of its own, taken from a
// sync.Pool, which keeps one per processor, and the buffers are merged
// afterwards. Benchmarks use it so that a storm measures the timer rather
// than the contention of its own bookkeeping.
package lateness

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"
)

// Recorder collects durations from any number of goroutines. Its zero
// value is not usable: make one with New.
type Recorder struct {
	pool    sync.Pool
	mu      sync.Mutex
	buffers []*buffer         // every buffer the pool has made, for Count and Max
	full    [][]time.Duration // the buffers' filled chunks, for Sorted
}

// chunkLen is the length of the chunks a buffer fills in turn: a buffer
// the pool drops (at a collection, or at random under the race detector)
// wastes at most one chunk.
const chunkLen = 256

// buffer is written only by the goroutine holding it, between the pool's
// Get and Put. Its count and worst are atomic so that Count and Max can
// read them while the buffer is being filled; the padding keeps two
// buffers off one cache line.
type buffer struct {
	_     cpu.CacheLinePad
	chunk []time.Duration // being filled; full ones are handed to the recorder
	count atomic.Int64    // durations recorded into this buffer, published after each
	worst atomic.Int64    // the largest duration recorded
	_     cpu.CacheLinePad
}

// New returns a Recorder.
func New() *Recorder {
	r := &Recorder{}
	r.pool.New = func() any {
		b := &buffer{chunk: make([]time.Duration, 0, chunkLen)}
		b.worst.Store(math.MinInt64)
		r.mu.Lock()
		r.buffers = append(r.buffers, b)
		r.mu.Unlock()
		return b
	}
	return r
}

// Record records d. It is safe for concurrent use and writes only the
// calling goroutine's buffer, but for one chunk in chunkLen, which it
// hands to the recorder under its lock.
func (r *Recorder) Record(d time.Duration) {
	b := r.pool.Get().(*buffer)
	if len(b.chunk) == chunkLen {
		r.mu.Lock()
		r.full = append(r.full, b.chunk)
		r.mu.Unlock()
		b.chunk = make([]time.Duration, 0, chunkLen)
	}
	b.chunk = append(b.chunk, d)
	b.count.Add(1) // uncontended: the buffer is this goroutine's alone
	if int64(d) > b.worst.Load() {
		b.worst.Store(int64(d))
	}
	r.pool.Put(b)
}

// Count returns how many durations have been recorded so far.
func (r *Recorder) Count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, b := range r.buffers {
		n += b.count.Load()
	}
	return n
}

// Max returns the largest duration recorded so far, and false if none was.
func (r *Recorder) Max() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	worst, found := int64(math.MinInt64), false
	for _, b := range r.buffers {
		if b.count.Load() > 0 {
			worst, found = max(worst, b.worst.Load()), true
		}
	}
	return time.Duration(worst), found
}

// Wait returns true once n durations have been recorded, polling every
// millisecond, or false if ctx ends first. The poll reads the buffers'
// counts: the recording goroutines share no counter.
func (r *Recorder) Wait(ctx context.Context, n int64) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for r.Count() < n {
		select {
		case <-ctx.Done():
			return r.Count() >= n
		case <-tick.C:
		}
	}
	return true
}

// Sorted returns every duration recorded, in increasing order, and
// releases the recorder's chunks (see Release). It must be called only
// once the recording has ended, as Wait or Count has shown, so that no
// buffer is still being written.
func (r *Recorder) Sorted() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, b := range r.buffers {
		n += b.count.Load() // orders each buffer's writes before the reads below
	}
	all := make([]time.Duration, 0, n)
	for _, c := range r.full {
		all = append(all, c...)
	}
	for _, b := range r.buffers {
		all = append(all, b.chunk...)
	}
	r.release()
	slices.Sort(all)
	return all
}

// Release lets the collector have the recorder's chunks, but for the one
// each buffer still in the pool holds, even while tasks still record: a
// pool keeps its buffers until the second collection from now, and a
// recorder not released would hold every record meanwhile, for the next
// measurement of the heap to count. Counts and records after Release are
// lost.
func (r *Recorder) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.release()
}

func (r *Recorder) release() {
	r.buffers, r.full = nil, nil
}
