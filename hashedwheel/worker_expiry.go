package hashedwheel

import (
	"cmp"
	"slices"
	"time"
)

// expireTimeouts is the step that expires the next tick's bucket, as
// Netty's HashedWheelBucket.expireTimeouts, if that tick has ended by now,
// and moves to the tick after it. Ticks before the first with anything due
// are skipped: their buckets hold nothing due in them. It reports whether
// it claimed or skipped any run.
func (w *worker) expireTimeouts(now int64) (claimed bool) {
	if w.stopped {
		return false
	}
	h, wh := w.timer, w.wheel
	wh.skipIdleTicks(wh.tickOf(now))
	if now < wh.tickEnd() {
		return false
	}
	lag := now - wh.tickEnd()
	due, ex := wh.expire(now, w.due)
	w.due = due
	wh.advance()
	if ex.misplaced > 0 {
		h.config.logger.Error("hashedwheel: timeouts found due before their deadline; kept until due",
			"count", ex.misplaced, "tick", wh.tick-1)
	}
	w.countTick(lag, ex)
	claimed = ex.expired+ex.runs+ex.skipped > 0
	if len(wh.schedules) > 0 {
		w.claimFrom = wh.tickOf(now) * wh.tickDuration
		claimed = w.claimSchedules() || claimed
	}
	return claimed
}

// claimSchedules claims the runs of the timeouts of ScheduleFunc that the
// walk found due, once the walk is done and the tasks it claimed are in
// w.due: their Scheduler's Next is user code, which may call Stop or
// runtime.Goexit, or panic, and must find the wheel in order. Each stays
// listed until its claim is done, so that a goroutine that takes over
// after a Goexit finds it again, and ends its runs (see callNext). It
// reports whether it claimed or skipped any run.
func (w *worker) claimSchedules() (claimed bool) {
	h, wh := w.timer, w.wheel
	for len(wh.schedules) > 0 && !w.stopped {
		t := wh.schedules[0]
		// Both clocks read together: the wall clock may have stepped since
		// the walk, and since the timer started.
		now, wallNow := h.now(), h.clock.Now()
		if w.claimSchedule(t, now, wallNow) {
			claimed = true
		}
		wh.schedules[0] = nil
		wh.schedules = wh.schedules[1:]
	}
	if len(wh.schedules) == 0 || w.stopped { // Stop cleared the wheel
		clear(wh.schedules)
		wh.schedules = wh.schedules[:0:0]
	}
	return claimed
}

// claimSchedule claims the run of t, a timeout of ScheduleFunc found due,
// at now and wallNow, and files it for its next run, unless it was
// cancelled or moved by a Reset meanwhile; it reports whether it claimed
// or skipped a run.
func (w *worker) claimSchedule(t *timeout, now int64, wallNow time.Time) bool {
	h, wh := w.timer, w.wheel
	for {
		word := t.word.Load()
		if stateOf(word) != stateScheduled {
			return false // cancelled: the cancellation pass, or Stop, unlinks it
		}
		if deadlineOf(word) > now { // a Reset moved it later
			wh.refile(t)
			return false
		}
		next, run, skipped, ended, c := t.claimScheduled(word, now, wallNow, w.claimFrom)
		if !t.word.CompareAndSwap(word, next) {
			continue
		}
		t.task.(*scheduledTask).commit(c)
		h.counters.periodicSkipped.Add(uint64(skipped))
		if ended {
			wh.remove(t)
			w.countExpired(1)
		} else {
			wh.refile(t)
		}
		if run {
			w.due = append(w.due, t)
		}
		return run || skipped > 0 || ended
	}
}

// countTick updates the counters after a tick with lag and what its walk
// did.
func (w *worker) countTick(lag int64, ex expiry) {
	h := w.timer
	h.counters.ticks.Add(1)
	if lag > w.maxLag {
		w.maxLag = lag
		h.counters.maxTickLag.Store(lag)
	}
	w.countExpired(ex.expired)
	h.counters.periodicSkipped.Add(uint64(ex.skipped))
}

// countExpired counts n timeouts expired.
func (w *worker) countExpired(n int) {
	h := w.timer
	if n > 0 {
		// Count them out before they run, so that a task can schedule
		// again at the pending limit (Netty a0e375bbc0).
		h.counters.addProcessed(&h.counters.expired, uint64(n))
		if h.maxPending > 0 {
			h.admitted.Add(-int64(n))
		}
	}
}

// maxDeferredDue bounds the claimed timeouts a late worker collects over
// the ticks it catches up before it dispatches them.
const maxDeferredDue = maxTransfersPerTick

// maxKeptDue bounds the capacity of the claimed-timeouts list the worker
// keeps once it is quiet, so that a storm's size is not kept after it.
const maxKeptDue = 1 << 14

// maxKeptScratch bounds the sort scratch space the worker keeps between
// ticks.
const maxKeptScratch = 1 << 14

// dispatchExpired hands the claimed timeouts to the dispatcher (see
// internal/dispatch): on a pool, those that came due together start
// together, up to the pool's size; with pool.Inline they run here, on the
// worker goroutine, in deadline order. A late worker first catches up the
// ticks it missed, so that their tasks start together, unless it has
// collected maxDeferredDue of them.
func (w *worker) dispatchExpired(now int64) {
	if w.stopped || len(w.due) >= maxDeferredDue || !w.behind(now) {
		w.dispatch()
	}
}

// dispatch hands every claimed timeout to the dispatcher.
func (w *worker) dispatch() {
	if len(w.due) == 0 {
		return
	}
	due := w.due
	// Emptied first: an inline task that calls runtime.Goexit leaves the
	// rest to the dispatcher (see worker.finishInterrupted), none here.
	w.due = w.due[:0]
	if len(due) > maxKeptDue {
		w.grewAt = w.timer.now()
	}
	if w.dispatcher.Inline() {
		// Producers reach the worker through several stacks, so the order
		// in which the timeouts arrived says nothing.
		w.sortByDeadline(due)
	}
	w.dispatcher.Dispatch(due)
}

// behind reports whether a tick that can expire something has ended by
// now and is yet to be processed.
func (w *worker) behind(now int64) bool {
	return w.wheel.endOf(w.nextTick(now)) <= now
}

// deadlineKey pairs a timeout with its deadline, so that sorting compares
// contiguous keys instead of chasing a pointer per comparison.
type deadlineKey struct {
	deadline int64
	timeout  *timeout
}

// sortByDeadline sorts due by deadline.
func (w *worker) sortByDeadline(due []*timeout) {
	keys := w.sortScratch[:0]
	for _, t := range due {
		d := deadlineOf(t.word.Load())
		if t.period != 0 {
			d = t.runFor(t.word.Load()) // the deadline the run is for, not the next
		}
		keys = append(keys, deadlineKey{d, t})
	}
	slices.SortStableFunc(keys, func(a, b deadlineKey) int { return cmp.Compare(a.deadline, b.deadline) })
	for i := range keys {
		due[i] = keys[i].timeout
		keys[i].timeout = nil
	}
	w.sortScratch = keys
}

// trimAfter is how long the worker keeps the lists it grew for a storm
// once they are no longer needed at that size, whether it sleeps or keeps
// ticking: their capacity is worth keeping while a storm lasts, not after.
const trimAfter = time.Second

// trimAfterStorm drops the storm-sized lists at now, if none was needed at
// that size for trimAfter.
func (w *worker) trimAfterStorm(now int64) {
	if now-w.grewAt >= int64(trimAfter) {
		w.trim()
	}
}

// trim drops the lists the worker grew for a storm.
func (w *worker) trim() {
	if cap(w.due) > maxKeptDue && len(w.due) == 0 {
		w.due = nil
	}
	if cap(w.sortScratch) > maxKeptScratch {
		w.sortScratch = nil
	}
	if cap(w.hooked) > maxKeptDue && len(w.hooked) == 0 {
		w.hooked = nil
	}
}

// nextTick returns the tick the worker expires next, skipping, up to the
// tick that covers now, those before the first with something due.
func (w *worker) nextTick(now int64) int64 {
	wh := w.wheel
	return max(wh.tick, min(wh.earliest, wh.tickOf(now)))
}
