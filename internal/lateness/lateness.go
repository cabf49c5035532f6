// Package lateness records figures, such as how late each task of an
// expiry storm ran, from many goroutines at once without a write that two
// of them share: each records into a buffer of its own, taken from a
// sync.Pool, which keeps one per processor, and the buffers are merged
// afterwards. Benchmarks use it so that a storm measures the timer rather
// than the contention of its own bookkeeping.
package lateness

import (
	"runtime"
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
	perBuf  int // initial capacity of a buffer
	mu      sync.Mutex
	buffers []*buffer // every buffer the pool has made, for Count and Merge
}

// buffer is written only by the goroutine holding it, between the pool's
// Get and Put. Its count and worst are atomic so that Count and Max can
// read them while the buffer is being filled; the padding keeps two
// buffers off one cache line.
type buffer struct {
	_     cpu.CacheLinePad
	late  []time.Duration
	count atomic.Int64 // len(late), published after each append
	worst atomic.Int64 // the largest duration recorded
	_     cpu.CacheLinePad
}

// New returns a Recorder sized for about n records in all.
func New(n int) *Recorder {
	r := &Recorder{perBuf: n/runtime.GOMAXPROCS(0) + 64}
	r.pool.New = func() any {
		b := &buffer{late: make([]time.Duration, 0, r.perBuf)}
		b.worst.Store(-1 << 63)
		r.mu.Lock()
		r.buffers = append(r.buffers, b)
		r.mu.Unlock()
		return b
	}
	return r
}

// Record records d. It is safe for concurrent use and writes only the
// calling goroutine's buffer.
func (r *Recorder) Record(d time.Duration) {
	b := r.pool.Get().(*buffer)
	b.late = append(b.late, d)
	b.count.Store(int64(len(b.late)))
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
	worst, found := int64(-1<<63), false
	for _, b := range r.buffers {
		if b.count.Load() > 0 {
			worst, found = max(worst, b.worst.Load()), true
		}
	}
	return time.Duration(worst), found
}

// Wait returns true once n durations have been recorded, polling every
// millisecond, or false if done is closed first. The poll reads the
// buffers' counts: the recording goroutines share no counter.
func (r *Recorder) Wait(n int64, done <-chan struct{}) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for r.Count() < n {
		select {
		case <-done:
			return r.Count() >= n
		case <-tick.C:
		}
	}
	return true
}

// Sorted returns every duration recorded, in increasing order. It must be
// called only once the recording has ended, as Wait or Count has shown,
// so that no buffer is still being written.
func (r *Recorder) Sorted() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, b := range r.buffers {
		n += b.count.Load() // orders each buffer's appends before the reads below
	}
	all := make([]time.Duration, 0, n)
	for _, b := range r.buffers {
		all = append(all, b.late[:b.count.Load()]...)
	}
	slices.Sort(all)
	return all
}
