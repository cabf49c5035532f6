package hashedwheel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// shardChoice is a way of choosing the intake shard a new timeout is
// pushed onto: the timer's own (pushTimeouts: by page until producers meet
// on a stack, then by processor), by processor from the start (the
// timer's, spread at once), or by the 8 KiB page that holds the timeout for good,
// as the timer chose before, kept here to compare. push pushes t and
// returns the shard's index and the compare-and-swaps that failed on the
// way.
type shardChoice struct {
	name string
	push func(h *HashedWheelTimer, t *timeout) (index uint32, retries int)
}

var (
	byTimer = shardChoice{"timer", func(h *HashedWheelTimer, t *timeout) (uint32, int) {
		_, index, retries, _ := h.pushTimeouts(t, t, 1)
		return index, retries
	}}
	byProcessor = shardChoice{"per-P", func(h *HashedWheelTimer, t *timeout) (uint32, int) {
		if !h.spread.Load() {
			h.spread.Store(true)
		}
		_, index, retries, _ := h.pushTimeouts(t, t, 1)
		return index, retries
	}}
	byPage = shardChoice{"page", pushByPage}
)

// pushByPage pushes t onto the shard of the page that holds it, retrying
// there until its compare-and-swap succeeds, as pushTimeouts does before
// producers meet: a cancelled top without a hook is unlinked.
func pushByPage(h *HashedWheelTimer, t *timeout) (index uint32, retries int) {
	index = uint32(uintptr(unsafe.Pointer(t))>>pageShift) & h.shardMask
	s := &h.shards[index]
	for {
		top := s.top.Load()
		below := top
		if top.currentState() == stateCancelled && cancelledHookOf(top.task) == nil && s.top.Load() == top {
			below = top.below()
		}
		t.prev, t.seq = below, top.seq+1
		if s.top.CompareAndSwap(top, t) {
			if below != top {
				top.forgetBelow()
			}
			return index, retries
		}
		retries++
	}
}

// newQueuedTimeout returns a timeout of h due after benchDelay, not yet
// pushed.
func newQueuedTimeout(h *HashedWheelTimer) *timeout {
	t := &timeout{timer: h, task: noopTask}
	t.word.Store(withDeadline(stateQueued, h.now(), benchDelay))
	return t
}

// BenchmarkShardChoice makes, pushes and cancels timeouts on one
// goroutine, choosing the shard as the timer does and by processor from
// the start, and reports the time beside choosing it by page, the two in
// alternating batches so that both meet the same machine ("x-page"): what
// the choice costs a goroutine that contends with none.
func BenchmarkShardChoice(b *testing.B) {
	const batch = 2000
	for _, c := range []shardChoice{byTimer, byProcessor} {
		b.Run(c.name, func(b *testing.B) {
			h := startTimer(b)
			run := func(c shardChoice, n int) {
				for range n {
					t := newQueuedTimeout(h)
					c.push(h, t)
					t.Cancel()
				}
			}
			var pageTime time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				n := min(batch, b.N-done)
				run(c, n)
				b.StopTimer()
				start := time.Now()
				run(byPage, n)
				pageTime += time.Since(start)
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed())/float64(pageTime), "x-page")
		})
	}
}

// BenchmarkShardChoiceParallel makes, pushes and cancels timeouts on every
// P at once, as BenchmarkNewTimeoutCancelParallel does, with each way of
// choosing the shard (the timer's own starts on a timer that has not yet
// seen two producers meet), and reports the compare-and-swaps that failed per
// push ("cas-retries/push"): the contention of Ps pushing onto one stack.
func BenchmarkShardChoiceParallel(b *testing.B) {
	for _, c := range []shardChoice{byTimer, byProcessor, byPage} {
		b.Run(c.name, func(b *testing.B) {
			h := startTimer(b)
			var retries atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				mine := 0
				for pb.Next() {
					t := newQueuedTimeout(h)
					_, r := c.push(h, t)
					mine += r
					t.Cancel()
				}
				retries.Add(int64(mine))
			})
			b.ReportMetric(float64(retries.Load())/float64(b.N), "cas-retries/push")
		})
	}
}

// BenchmarkShardsSharedAtOnce has GOMAXPROCS goroutines each push one
// timeout at the same moment, once per iteration, by processor and by
// page, and reports how many shards two or more of them
// pushed onto ("shards-shared", a mean over the iterations) and how many
// of the goroutines pushed onto a shard another one also pushed onto
// ("goroutines-sharing"). The goroutines meet at a barrier they spin on,
// so that all of them hold a P when they push: the figures are a property
// of the choice, which GOMAXPROCS=16 shows on any number of cores.
func BenchmarkShardsSharedAtOnce(b *testing.B) {
	for _, c := range []shardChoice{byProcessor, byPage} {
		b.Run(c.name, func(b *testing.B) {
			h := startTimer(b)
			procs := runtime.GOMAXPROCS(0)
			picked := make([]uint32, b.N*procs) // round r, goroutine g: [r*procs+g]
			var arrived atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := range procs {
				wg.Go(func() {
					for r := range b.N {
						arrived.Add(1)
						for arrived.Load() < int64(procs*(r+1)) {
						}
						t := newQueuedTimeout(h)
						picked[r*procs+g], _ = c.push(h, t)
						t.Cancel()
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			shared, sharing := 0, 0
			for r := range b.N {
				onShard := map[uint32]int{}
				for _, index := range picked[r*procs : (r+1)*procs] {
					onShard[index]++
				}
				for _, n := range onShard {
					if n > 1 {
						shared++
						sharing += n
					}
				}
			}
			b.ReportMetric(float64(shared)/float64(b.N), "shards-shared")
			b.ReportMetric(float64(sharing)/float64(b.N), "goroutines-sharing")
			b.ReportMetric(float64(procs), "goroutines")
		})
	}
}
