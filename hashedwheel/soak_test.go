package hashedwheel

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/pool"
)

// soakDuration is the -soak flag: make soak sets a few minutes, make test
// 10 seconds under -race; without it TestSoak is skipped.
var soakDuration = flag.Duration("soak", 0, "run TestSoak for this long (0: skip it)")

// The soak's shape.
const (
	soakSlots        = 4                      // timers alive at once
	soakChurnEvery   = 25 * time.Millisecond  // one timer replaced this often
	soakRing         = 256                    // recent timeouts a producer may cancel
	soakMaxPending   = 5_000                  // the limit of the limited slot
	soakSettleBound  = 60 * time.Second       // for pool tasks and goroutines to finish
	soakHeapSlack    = 8 << 20                // heap growth tolerated after GC
	soakLongDelay    = 500 * time.Millisecond // the occasional long timeout
	soakShortDelayNs = int64(20 * time.Millisecond)
)

// soakTimer is one timer of the soak and what the test counted for it,
// independently of the timer's Stats.
type soakTimer struct {
	h    *HashedWheelTimer
	name string
	task *soakTask

	scheduled, cancelled, returned atomic.Int64
	rejectedStopped, rejectedFull  atomic.Int64
	stopped                        atomic.Bool
}

// soakTask is shared by all the timeouts of one timer: it counts runs.
type soakTask struct{ fired atomic.Int64 }

func (s *soakTask) Run(Timeout) { s.fired.Add(1) }

// soakEntry is a timeout a producer may cancel later.
type soakEntry struct {
	to Timeout
	st *soakTimer
}

// TestSoak runs producers on every core that schedule and cancel at full
// speed, with random delays, on a few timers that are replaced (made and
// stopped) every soakChurnEvery, for -soak. At the end the totals balance
// exactly, per timer and overall: scheduled = fired + cancelled + returned
// by Stop, as counted by the test and as Stats reports; the goroutines
// return to the baseline; the heap returns near the baseline after GC.
func TestSoak(t *testing.T) {
	if *soakDuration <= 0 {
		t.Skip("run with -soak=DURATION (make soak, make soak-quick)")
	}
	runtime.GC()
	baseGoroutines := runtime.NumGoroutine()
	var baseMem runtime.MemStats
	runtime.ReadMemStats(&baseMem)

	shared, err := pool.NewAnts(64) // one slot's timers share a caller-owned pool
	require.NoError(t, err)
	var (
		mu      sync.Mutex
		all     []*soakTimer // every timer made, for the final balance
		slots   [soakSlots]atomic.Pointer[soakTimer]
		made    int
		stopErr error
	)
	newTimer := func(slot int) *soakTimer {
		mu.Lock()
		made++
		n := made
		mu.Unlock()
		opts := []Option{WithTickDuration(time.Millisecond), WithLogger(discardLogger())}
		name := fmt.Sprintf("timer %d (slot %d", n, slot)
		switch slot {
		case 0:
			name += ", own pool)"
		case 1:
			opts = append(opts, WithExecutor(pool.Inline), WithTicksPerWheel(64))
			name += ", inline, 64 buckets)"
		case 2:
			opts = append(opts, WithExecutor(shared), WithTicksPerWheel(8))
			name += ", shared pool, 8 buckets)"
		default:
			opts = append(opts, WithMaxPendingTimeouts(soakMaxPending))
			name += fmt.Sprintf(", own pool, limit %d)", soakMaxPending)
		}
		h, err := New(opts...)
		if err != nil {
			panic(err) // valid options: cannot happen
		}
		if n%2 == 0 { // the others start lazily
			if err := h.Start(); err != nil {
				panic(err)
			}
		}
		st := &soakTimer{h: h, name: name, task: &soakTask{}}
		mu.Lock()
		all = append(all, st)
		mu.Unlock()
		return st
	}
	stop := func(st *soakTimer) {
		if !st.stopped.CompareAndSwap(false, true) {
			return
		}
		res := st.h.Stop()
		for _, to := range res {
			if !to.IsCancelled() || to.Task() != st.task {
				mu.Lock()
				stopErr = fmt.Errorf("%s: Stop returned %v, not cancelled or not its task", st.name, to)
				mu.Unlock()
			}
		}
		st.returned.Add(int64(len(res)))
	}
	for i := range slots {
		slots[i].Store(newTimer(i))
	}

	start := time.Now()
	end := start.Add(*soakDuration)
	var wg sync.WaitGroup
	var ops atomic.Int64
	producers := runtime.GOMAXPROCS(0) * 2
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), uint64(start.UnixNano())))
			ring := make([]soakEntry, 0, soakRing)
			var n int64
			for i := 0; ; i++ {
				if i%256 == 0 && time.Now().After(end) {
					break
				}
				st := slots[rng.IntN(soakSlots)].Load()
				var delay time.Duration
				switch r := rng.IntN(100); {
				case r < 5:
					delay = -time.Duration(rng.Int64N(soakShortDelayNs))
				case r < 10:
					delay = soakLongDelay + time.Duration(rng.Int64N(int64(soakLongDelay)))
				default:
					delay = time.Duration(rng.Int64N(soakShortDelayNs))
				}
				to, err := st.h.NewTimeout(st.task, delay)
				n++
				switch {
				case errors.Is(err, ErrStopped):
					st.rejectedStopped.Add(1)
				case errors.Is(err, ErrTooManyPendingTimeouts):
					st.rejectedFull.Add(1)
				case err != nil:
					assert.NoError(t, err, "%s: NewTimeout", st.name) // a producer's goroutine: no require
					return
				default:
					st.scheduled.Add(1)
					if len(ring) < soakRing {
						ring = append(ring, soakEntry{to, st})
					} else {
						ring[rng.IntN(soakRing)] = soakEntry{to, st}
					}
				}
				if len(ring) > 0 && rng.IntN(2) == 0 {
					k := rng.IntN(len(ring))
					e := ring[k]
					if e.to.Cancel() {
						e.st.cancelled.Add(1)
					}
					n++
					ring[k] = ring[len(ring)-1]
					ring = ring[:len(ring)-1]
				}
			}
			ops.Add(n)
		}()
	}
	// The churner replaces one timer at a time: the new one takes the slot,
	// then the old one is stopped while producers still hold it.
	churnDone := make(chan struct{})
	churnStop := make(chan struct{})
	go func() {
		defer close(churnDone)
		ticker := time.NewTicker(soakChurnEvery)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-churnStop:
				return
			case <-ticker.C:
			}
			slot := i % soakSlots
			old := slots[slot].Swap(newTimer(slot))
			stop(old)
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	close(churnStop)
	<-churnDone
	for i := range slots {
		stop(slots[i].Load())
	}
	require.NoError(t, stopErr)

	// Tasks handed to a pool may still be running: wait, polling, until each
	// timer's task has run as often as it has expired timeouts. (No event
	// marks the end of a pool's work, and a channel on the task's path
	// would slow the soak down.)
	waitUntil := time.Now().Add(soakSettleBound)
	for _, st := range all {
		for st.task.fired.Load() < int64(st.h.Stats().Expired) && time.Now().Before(waitUntil) {
			time.Sleep(time.Millisecond)
		}
	}
	shared.Release()

	var tot struct{ scheduled, fired, cancelled, returned, rejStopped, rejFull int64 }
	for _, st := range all {
		s := st.h.Stats()
		sched, fired, canc, ret := st.scheduled.Load(), st.task.fired.Load(), st.cancelled.Load(), st.returned.Load()
		assert.Equal(t, sched, fired+canc+ret, "%s: scheduled %d != fired %d + cancelled %d + returned by Stop %d (Stats %+v)",
			st.name, sched, fired, canc, ret, s)
		counted := Stats{Scheduled: uint64(sched), Expired: uint64(fired), Cancelled: uint64(canc), ReturnedByStop: uint64(ret),
			RejectedStopped: uint64(st.rejectedStopped.Load()), RejectedFull: uint64(st.rejectedFull.Load())}
		got := Stats{Pending: s.Pending, Scheduled: s.Scheduled, Expired: s.Expired, Cancelled: s.Cancelled,
			ReturnedByStop: s.ReturnedByStop, RejectedStopped: s.RejectedStopped, RejectedFull: s.RejectedFull}
		assert.Equal(t, counted, got, "%s: Stats %+v, against the test's counts", st.name, s)
		tot.scheduled += sched
		tot.fired += fired
		tot.cancelled += canc
		tot.returned += ret
		tot.rejStopped += st.rejectedStopped.Load()
		tot.rejFull += st.rejectedFull.Load()
	}
	t.Logf("%d producers, %v: %d operations, %.0f ops/s; %d timers made and stopped",
		producers, elapsed.Round(time.Millisecond), ops.Load(), float64(ops.Load())/elapsed.Seconds(), len(all))
	t.Logf("balance: scheduled %d = fired %d + cancelled %d + returned by Stop %d (%d); refused: %d stopped, %d full",
		tot.scheduled, tot.fired, tot.cancelled, tot.returned, tot.fired+tot.cancelled+tot.returned, tot.rejStopped, tot.rejFull)
	assert.Equal(t, tot.scheduled, tot.fired+tot.cancelled+tot.returned, "totals do not balance")
	assert.True(t, tot.fired != 0 && tot.cancelled != 0 && tot.returned != 0 && tot.rejStopped != 0,
		"the soak did not exercise every outcome: %+v", tot)

	// Goroutines: the workers and pools are gone.
	all = nil
	for runtime.NumGoroutine() > baseGoroutines && time.Now().Before(waitUntil) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseGoroutines {
		buf := make([]byte, 1<<20)
		require.Fail(t, fmt.Sprintf("%d goroutines, baseline %d:\n%s", n, baseGoroutines, buf[:runtime.Stack(buf, true)]))
	}
	// Heap: what the soak allocated is garbage now.
	runtime.GC()
	runtime.GC()
	var endMem runtime.MemStats
	runtime.ReadMemStats(&endMem)
	t.Logf("heap: %d KiB at the start, %d KiB after GC at the end; goroutines %d, baseline %d",
		baseMem.HeapAlloc>>10, endMem.HeapAlloc>>10, runtime.NumGoroutine(), baseGoroutines)
	assert.LessOrEqual(t, endMem.HeapAlloc, baseMem.HeapAlloc+soakHeapSlack,
		"heap after GC %d KiB, baseline %d KiB: more than %d MiB retained",
		endMem.HeapAlloc>>10, baseMem.HeapAlloc>>10, soakHeapSlack>>20)
}
