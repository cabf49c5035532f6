package hashedwheel

import (
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clock"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/pool"
)

// maxDeferredDue bounds the expired timeouts a late worker collects over
// the ticks it catches up before handing them to the executor.
const maxDeferredDue = maxTransfersPerTick

// lingerTime is how long a worker keeps ticking after its last activity
// before it falls asleep until the next NewTimeout: timeouts made and
// cancelled back to back then do not pay a wake-up each.
const lingerTime = 50 * time.Millisecond

// worker is the goroutine that owns the wheel. Everything here but the
// timer's atomics is touched by the worker alone.
type worker struct {
	timer         *HashedWheelTimer
	wheel         *wheel
	due           []*timeout // expired timeouts not yet handed to the executor
	sortScratch   []deadlineOf
	staged        staging // taken in beyond a tick's budget, not yet in the wheel
	transfersLeft int     // of the current tick's maxTransfersPerTick
	woken         bool    // slept since the last tick: a producer may have woken the worker early
	inline        bool    // the executor is pool.Inline: no batching
	stopped       bool
	maxLag        int64
	uncounted     int        // cancellations completed but not yet counted
	hooked        []*timeout // cancellations whose Cancelled hook is yet to run
	quietTicks    int        // ticks in a row with nothing to do
	lingerTicks   int        // quiet ticks before the worker falls asleep
}

func newWorker(h *HashedWheelTimer) *worker {
	linger := max(2, int(lingerTime/h.config.tickDuration))
	return &worker{
		timer:       h,
		wheel:       newWheel(h.config.ticksPerWheel, int64(h.config.tickDuration)),
		inline:      h.executor == pool.Inline,
		quietTicks:  linger, // nothing has happened yet
		lingerTicks: linger,
	}
}

// run is the worker goroutine: it sleeps until the end of the current tick,
// processes the tick, and repeats, until Stop.
func (w *worker) run() {
	h := w.timer
	h.workerID.Store(goid.Current())
	defer w.exit()
	for !w.stopped {
		if h.state.Load() == timerStopped {
			w.dispatch() // claimed timeouts run, even now
			if !w.stopped {
				h.stopResult = w.shutdown()
			}
			return
		}
		now := h.clock.Now() - h.startNanos
		end := w.wheel.tickEnd()
		if now < end {
			w.dispatch()
			if w.stopped { // a task running inline called Stop
				return
			}
			if w.woken {
				// The tick has not ended: a producer woke the worker
				// because a stack or a queue has taken in wakeEvery more.
				w.woken = false
				w.takeInBetweenTicks()
				continue
			}
			if w.quietTicks >= w.lingerTicks && w.wheel.size == 0 && w.staged.len() == 0 && h.intakeEmpty() {
				w.sleepUntilWoken()
			} else {
				h.sleeper.Sleep(instant(h.startNanos, end))
				w.woken = true
			}
			continue
		}
		// Tick ends are absolute, so lateness never accumulates: a late
		// worker runs the ticks it missed back to back, and hands their
		// expired timeouts to the executor together once it has caught up.
		w.runTick(now, now-end)
		if len(w.due) >= maxDeferredDue {
			w.dispatch()
		}
	}
}

// runTick processes the current tick, in Netty's order: unlink cancelled
// timeouts, move new ones into the wheel, then expire the tick's bucket.
// Transfer must come before expiry: a new timeout due a whole number of
// turns from now lands in the current bucket and must lose its first round
// in this same pass.
func (w *worker) runTick(now, lag int64) {
	h := w.timer
	w.woken = false
	w.processCancellations()
	if w.stopped { // a Cancelled hook stopped the timer
		return
	}
	active := w.transfer()
	if w.stopped { // a Cancelled hook stopped the timer
		return
	}
	expiredBefore := len(w.due)
	due, misplaced := w.wheel.expire(now, w.due)
	w.due = due
	w.wheel.advance()
	expired := len(due) - expiredBefore
	if active || expired > 0 {
		w.quietTicks = 0
	} else {
		w.quietTicks++
	}
	if misplaced > 0 {
		h.config.logger.Error("hashedwheel: timeouts found in the wrong bucket; kept until due",
			"count", misplaced, "tick", w.wheel.tick-1)
	}
	h.counters.ticks.Add(1)
	if lag > w.maxLag {
		w.maxLag = lag
		h.counters.maxTickLag.Store(lag)
	}
	if expired > 0 {
		// Count them out before they run, so that a task can schedule
		// again at the pending limit (Netty a0e375bbc0).
		h.counters.expired.Add(uint64(expired))
		if h.maxPending > 0 {
			h.admitted.Add(-int64(expired))
		}
	}
}

// instant returns the clock reading at offset after start, saturating at
// clock.Forever instead of overflowing (a tick can be long enough that its
// end lies beyond the clock's range).
func instant(start, offset int64) int64 {
	if offset > clock.Forever-start {
		return clock.Forever
	}
	return start + offset
}

// sleepUntilWoken parks the worker while there is nothing to do, instead
// of waking every tick: NewTimeout or Stop wakes it.
func (w *worker) sleepUntilWoken() {
	h := w.timer
	h.idle.Store(true)
	// A producer that pushed before it could see the flag will not wake us:
	// look again now that the flag is visible.
	if !h.intakeEmpty() || h.state.Load() == timerStopped {
		if h.idle.CompareAndSwap(true, false) {
			return
		}
		// A producer took the flag and is waking us: Sleep returns at once.
	}
	h.sleeper.Sleep(clock.Forever)
	h.idle.Store(false)
	w.quietTicks = 0
	// Resume at the tick in which the waking timeout was made: it and any
	// other timeout made since fall in that tick or later, and if the worker
	// woke late, that tick has ended and is processed at once.
	w.wheel.skipTo(h.wokenAt.Load())
}

// exit releases what the worker held and lets Stop return.
func (w *worker) exit() {
	h := w.timer
	if h.ownsExecutor {
		h.executor.(*pool.Ants).Release()
	}
	h.sleeper.Close()
	instances.Add(-1)
	close(h.done)
}
