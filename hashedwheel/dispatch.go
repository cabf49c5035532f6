package hashedwheel

import (
	"cmp"
	"runtime/debug"
	"slices"
	"time"

	"github.com/wheeltimer/wheeltimer/pool"
)

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

// executorSize returns how many tasks e runs at once: its Cap, if it has
// one, else pool.DefaultSize.
func executorSize(e pool.Executor) int {
	if c, ok := e.(interface{ Cap() int }); ok {
		return max(c.Cap(), 1)
	}
	return pool.DefaultSize
}

// executorRefused counts and logs an executor's refusal of a drain
// function, which then runs on a goroutine of its own.
func (h *HashedWheelTimer) executorRefused(err error) {
	h.counters.executorFailures.Add(1)
	h.config.logger.Warn("hashedwheel: executor refused expired tasks; running them on a new goroutine",
		"error", err)
}

// run runs the task of a claimed timeout: once, or, for a periodic one,
// as its run marks say (see periodic.go).
func (t *timeout) run() {
	if t.period != 0 {
		t.runPeriodic()
		return
	}
	t.runTask()
}

// runTask runs the task, recovering and logging a panic.
func (t *timeout) runTask() {
	returned := false
	defer t.timer.afterUserCode("TimerTask", t, &returned)
	t.task.Run(t)
	returned = true
}

// afterUserCode, deferred after a task or hook of t that sets *returned
// as it returns, recovers a panic and logs it with its stack, as net/http
// does for a handler, and logs a call of runtime.Goexit, which cannot be
// stopped: the goroutine ends, and the dispatcher or the worker carries on
// with another. A user's task or hook never takes the timer down.
func (h *HashedWheelTimer) afterUserCode(what string, t *timeout, returned *bool) {
	if *returned {
		return
	}
	if r := recover(); r != nil {
		h.config.logger.Error("hashedwheel: "+what+" panicked",
			"timeout", t, "panic", r, "stack", string(debug.Stack()))
		return
	}
	h.config.logger.Error("hashedwheel: "+what+" called runtime.Goexit; its goroutine ended, the timer carries on",
		"timeout", t, "stack", string(debug.Stack()))
}
