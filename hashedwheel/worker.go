package hashedwheel

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/pool"
)

// worker is the goroutine that owns the wheel, as Netty's Worker: it waits
// for a tick, takes in what producers handed it, expires the tick's bucket
// and hands the due tasks to the executor. Everything here but the timer's
// atomics is touched by the worker alone.
type worker struct {
	timer      *HashedWheelTimer
	wheel      *wheel
	dispatcher *dispatch.Dispatcher[dueRun]
	staged     staging    // collected beyond a tick's budget, not yet in the wheel
	due        []dueRun   // claimed, not yet dispatched
	hooked     []*timeout // cancelled, whose Cancelled hook is yet to run
	hookNext   int        // hooked[:hookNext] have run or are running
	stopped    bool       // shutdown has run

	transfersLeft int   // of the budget of the tick budgetTick
	budgetTick    int64 //
	lastActive    int64 // the tick of the last pass that did something: the worker lingers after it
	lingerTicks   int64 // quiet ticks before the worker sleeps until due
	plannedWake   int64 // the end of the tick the worker is due back at
	maxLag        int64 // how late it has been back at most
	grewAt        int64 // when a dispatch last needed a storm-sized list
	claimFrom     int64 // the start of the first tick not ended at the pass's now (claimSchedules)
}

// lingerTime is how long a worker keeps ticking after its last activity
// before it sleeps until the next due timeout: timeouts made and cancelled
// back to back then pay no wake-up each.
const lingerTime = 50 * time.Millisecond

func newWorker(h *HashedWheelTimer) *worker {
	linger := max(2, int64(lingerTime/h.config.tickDuration))
	w := &worker{
		timer:       h,
		wheel:       newWheel(h.config.ticksPerWheel, int64(h.config.tickDuration)),
		lastActive:  -linger, // nothing has happened yet
		lingerTicks: linger,
		plannedWake: math.MaxInt64,
	}
	cfg := dispatch.Config[dueRun]{ // Parallelism 0: the executor's size, from its Cap
		Run:      dueRun.run,
		Refused:  h.executorRefused,
		Deadline: func(r dueRun) int64 { return r.deadline },
		Now:      h.now,
	}
	if h.executor != pool.Inline {
		cfg.Executor = h.executor
	}
	if t, ok := h.sleeper.(clockwork.WorkTracker); ok { // a fake clock waits for the tasks
		cfg.Started, cfg.Finished = t.Started, t.Finished
	}
	w.dispatcher = dispatch.New(cfg)
	return w
}

// run is the worker goroutine. User code on it (an inline task, a hook, a
// Scheduler) that calls runtime.Goexit ends it: a new one finishes what it
// interrupted, then carries on with the loop.
func (w *worker) run() {
	w.timer.workerID.Store(goid.Current())
	returned := false
	defer func() {
		if returned {
			w.exit()
		} else {
			go w.run()
		}
	}()
	w.dispatcher.RunInline()
	if len(w.wheel.schedules) > 0 {
		w.claimSchedules()
		w.dispatchExpired(w.timer.now())
	}
	w.runCancelledHooks()
	w.loop()
	returned = true
}

// loop is Netty's Worker.run, until Stop: wait for the next tick, process
// the cancellations (first: a timeout cancelled before its tick is never
// claimed), move new timeouts into their buckets, expire the tick's
// bucket, hand its tasks to the executor, and run the Cancelled hooks
// (last: a slow hook delays no task of the tick).
func (w *worker) loop() {
	for !w.stopped {
		now, woken := w.waitForNextTick()
		if w.timer.state.Load() == timerStopped {
			w.shutdown()
			return
		}
		cancelled := w.processCancelledTasks()
		transferred := w.transferTimeoutsToBuckets(now)
		expired := w.expireTimeouts(now)
		w.dispatchExpired(now)
		if len(w.hooked) > 0 {
			w.runCancelledHooks()
		}
		if now-w.grewAt >= int64(trimAfter) {
			w.trim()
		}
		if woken || cancelled || transferred || expired {
			w.lastActive = w.wheel.tickOf(now) // linger: more may come
		}
	}
}

// waitForNextTick waits, as Netty's, for the end of the next tick and
// returns the clock then, or sooner when a producer or Stop wakes it.
// After lingerTime without activity it sleeps instead until the first tick
// with something due, with idle set so that producers wake it; it reports
// whether it was woken from that sleep. It records how late it is back.
func (w *worker) waitForNextTick() (now int64, woken bool) {
	h, wh := w.timer, w.wheel
	for slept := false; ; slept = true {
		now = h.now()
		if lag := now - w.plannedWake; lag > w.maxLag {
			w.maxLag = lag
			h.counters.maxTickLag.Store(lag)
		}
		if slept || now >= wh.endOf(wh.nextTick(now)) || h.state.Load() == timerStopped {
			w.plannedWake = wh.endOf(wh.tickOf(now)) // back after this pass by the end of this tick
			return now, woken
		}
		if wh.tickOf(now)-w.lastActive < w.lingerTicks || w.staged.len() > 0 {
			w.plannedWake = wh.endOf(wh.nextTick(now))
			h.sleeper.Sleep(instant(h.startNanos, w.plannedWake))
			continue
		}
		w.plannedWake = wh.endOf(max(wh.tick, wh.earliest))
		w.trim()
		h.idle.Store(true)
		// A producer that pushed before the flag was visible wakes nobody.
		if (!h.intakeEmpty() || h.state.Load() == timerStopped) && h.idle.CompareAndSwap(true, false) {
			continue
		} // else a producer took the flag and wakes the worker: Sleep returns at once
		h.sleeper.Sleep(instant(h.startNanos, w.plannedWake))
		h.idle.Store(false)
		woken = true
	}
}

// processCancelledTasks, as Netty's, unlinks the timeouts Cancel reported
// and files again those a Reset moved earlier; it reports whether it
// found any.
func (w *worker) processCancelledTasks() (found bool) {
	if verifyEachStep {
		defer w.checkWheel("processCancelledTasks")
	}
	for i := range w.timer.shards {
		s := &w.timer.shards[i]
		if !s.reported.Load() {
			continue
		}
		s.reported.Store(false) // before the pops: a report after them sets it again
		for t, ok := s.cancelled.Pop(); ok; t, ok = s.cancelled.Pop() {
			found = true
			w.wheel.unlink(t)
			w.cancellationDone(t)
		}
		for t, ok := s.moved.Pop(); ok; t, ok = s.moved.Pop() {
			found = true
			// Cancelled or expired since, its own path unlinks it.
			if t.currentState() == stateScheduled {
				w.wheel.refile(t)
			}
		}
	}
	return found
}

// cancellationDone records that t, cancelled, has left the wheel or the
// intake. Its Cancelled hook runs at the end of the pass: it may call
// Stop, which must find every timeout placed.
func (w *worker) cancellationDone(t *timeout) {
	if cancelledHookOf(t.task) != nil {
		w.hooked = append(w.hooked, t)
	}
}

// The worker's budgets per tick, as Netty's 100 000, so that producers
// adding in a tight loop cannot starve expiry: the rest wait, staged, for
// the ticks that follow. Dropping a cancelled one costs far less.
const (
	maxTransfersPerTick = 100_000
	maxDiscardsPerTick  = 10 * maxTransfersPerTick
	transferBatch       = 64 // staged timeouts moved at a time
)

// transferTimeoutsToBuckets, as Netty's, moves new timeouts into the
// wheel while the tick's budget lasts, the staged first, and drops those
// cancelled. It stages the rest, and all while any is staged, so that each
// producer's reach the wheel in order. It reports whether it found any.
func (w *worker) transferTimeoutsToBuckets(now int64) (found bool) {
	if verifyEachStep {
		defer w.checkWheel("transferTimeoutsToBuckets")
	}
	if tick := w.wheel.tickOf(now); tick > w.budgetTick {
		w.transfersLeft, w.budgetTick = maxTransfersPerTick, tick
	}
	var buf [transferBatch]*timeout
	for discards := maxDiscardsPerTick; w.transfersLeft > 0 && discards > 0 && !w.stopped && w.staged.len() > 0; {
		n := w.staged.pop(buf[:min(transferBatch, w.transfersLeft, discards)])
		if n == 0 {
			break
		}
		found = true
		// Written on other cores long ago: loaded together, the cache
		// misses overlap.
		var states [transferBatch]uint64
		for j, t := range buf[:n] {
			states[j] = t.currentState()
		}
		for j, t := range buf[:n] {
			if states[j] != stateCancelled && w.wheel.insert(t) {
				w.transfersLeft--
			} else {
				w.drop(t)
				discards--
			}
			buf[j] = nil
		}
	}
	for i := 0; i < len(w.timer.shards) && !w.stopped; i++ {
		head, unlinked := w.timer.shards[i].take(false)
		found = found || head != nil || unlinked != 0
		for t := head; t != nil; {
			next := t.next
			t.next = nil
			switch {
			case stateOf(t.word.Load()) == stateCancelled:
				w.drop(t)
			case w.transfersLeft > 0 && w.staged.len() == 0:
				if w.wheel.insert(t) {
					w.transfersLeft--
				} else { // cancelled just now
					w.drop(t)
				}
			default:
				w.staged.push(t)
			}
			t = next
		}
	}
	return found
}

// drop completes the cancellation of t, cancelled while queued.
func (w *worker) drop(t *timeout) {
	t.forgetBelow() // a caller keeping it keeps nothing else alive
	w.cancellationDone(t)
}

// expireTimeouts, as Netty's HashedWheelBucket.expireTimeouts, expires
// the next tick with anything due if it has ended by now; it reports
// whether it claimed or skipped any run.
func (w *worker) expireTimeouts(now int64) (claimed bool) {
	if verifyEachStep {
		defer w.checkWheel("expireTimeouts")
	}
	h, wh := w.timer, w.wheel
	if w.stopped {
		return false
	}
	wh.tick = wh.nextTick(now) // nothing in the skipped ticks' buckets is due in them
	if now < wh.endOf(wh.tick) {
		return false
	}
	var ex expiry
	w.due, ex = wh.expire(now, w.due)
	if ex.misplaced > 0 {
		if verifyEachStep {
			panic(fmt.Sprintf("hashedwheel: wheeltimer_verify: %d timeouts found due before their deadline in tick %d",
				ex.misplaced, wh.tick-1))
		}
		h.config.logger.Error("hashedwheel: timeouts found due before their deadline; kept until due",
			"count", ex.misplaced, "tick", wh.tick-1)
	}
	h.counters.ticks.Add(1)
	h.counters.periodicSkipped.Add(uint64(ex.skipped))
	w.countExpired(ex.expired)
	claimed = ex.expired+ex.runs+ex.skipped > 0
	if len(wh.schedules) > 0 {
		w.claimFrom = wh.tickOf(now) * wh.tickDuration
		claimed = w.claimSchedules() || claimed
	}
	return claimed
}

// countExpired counts n timeouts expired and frees their places under the
// pending limit before they run: a task may schedule again at the limit.
func (w *worker) countExpired(n int) {
	h := w.timer
	if n > 0 {
		h.counters.expired.Add(uint64(n))
		if h.maxPending > 0 {
			h.admitted.Add(-int64(n))
		}
	}
}

// A late worker collects at most maxDeferredDue runs over the ticks it
// catches up before it dispatches them; lists grown beyond maxKeptDue are
// dropped once none needed that size for trimAfter.
const (
	maxDeferredDue = maxTransfersPerTick
	maxKeptDue     = 1 << 14
	trimAfter      = time.Second
)

// dispatchExpired hands the claimed runs to the dispatcher, once a late
// worker has caught up the ticks it missed, so that they start together.
func (w *worker) dispatchExpired(now int64) {
	if w.wheel.endOf(w.wheel.nextTick(now)) > now || len(w.due) >= maxDeferredDue || w.stopped {
		w.dispatch()
	}
}

// dispatch hands every claimed run to the dispatcher: with pool.Inline
// they run here, in deadline order.
func (w *worker) dispatch() {
	if len(w.due) == 0 {
		return
	}
	due := w.due
	w.due = w.due[:0] // emptied first: after an inline task's Goexit the dispatcher has the rest
	if len(due) > maxKeptDue {
		w.grewAt = w.timer.now()
	}
	if w.timer.executor == pool.Inline { // producers reach the worker through several stacks, in no order
		slices.SortStableFunc(due, func(a, b dueRun) int { return cmp.Compare(a.deadline, b.deadline) })
	}
	w.dispatcher.Dispatch(due)
}

// dueRun is a claimed run: a timeout and the deadline the run is for, a
// periodic timeout's state word holding its next run's by then.
type dueRun struct {
	deadline int64
	timeout  *timeout
}

// run runs the claimed timeout's task: once, or, for a periodic one, as
// its run marks say (see periodic.go).
func (r dueRun) run() {
	if t := r.timeout; t.period != 0 {
		t.runPeriodic()
	} else {
		t.runTask()
	}
}

// runCancelledHooks calls the Cancelled hooks of the cancellations done so
// far, each taken before it runs so that none runs twice. It reads the
// list through w: a hook may call Stop, whose shutdown appends to it, or
// runtime.Goexit, after which the next worker goroutine goes on.
func (w *worker) runCancelledHooks() {
	for w.hookNext < len(w.hooked) {
		t := w.hooked[w.hookNext]
		w.hooked[w.hookNext] = nil
		w.hookNext++
		w.timer.runCancelledHook(t)
	}
	w.hooked, w.hookNext = w.hooked[:0], 0
}

// trim drops the lists the worker grew for a storm.
func (w *worker) trim() {
	if cap(w.due) > maxKeptDue && len(w.due) == 0 {
		w.due = nil
	}
	if cap(w.hooked) > maxKeptDue && len(w.hooked) == 0 {
		w.hooked = nil
	}
}

// checkWheel panics, naming step, if the check of the wheeltimer_verify
// build tag finds the wheel broken after it (see wheel.verifyStep).
func (w *worker) checkWheel(step string) {
	if err := w.wheel.verifyStep(); err != nil {
		panic(fmt.Sprintf("hashedwheel: wheeltimer_verify: the wheel's invariants are broken after %s: %v", step, err))
	}
}
