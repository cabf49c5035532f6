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
// atomics is the worker's alone.
type worker struct {
	timer      *HashedWheelTimer
	wheel      *wheel
	dispatcher *dispatch.Dispatcher[*timeout]
	due        []dueRun   // claimed, not yet dispatched
	hooked     []*timeout // cancelled, whose Cancelled hook is yet to run
	hookNext   int        // hooked[:hookNext] have run or are running
	stopped    bool       // shutdown has run

	// The new timeouts taken beyond a tick's budget, oldest first, linked
	// through next, for the next ticks to move into the wheel first. Still
	// queued, they cancel with one compare-and-swap.
	staged, stagedTail *timeout

	transfersLeft, discardsLeft int   // of the budgets of the tick budgetTick
	budgetTick                  int64 //
	lastActive                  int64 // the tick of the last pass that did something: the worker lingers after it
	lingerTicks                 int64 // quiet ticks before the worker sleeps until due
	plannedWake                 int64 // the end of the tick the worker is due back at
	maxLag                      int64 // how late it has been back at most
	grewAt                      int64 // when a dispatch last needed a storm-sized list
	claimFrom                   int64 // the start of the first tick not ended at the pass's now (claimSchedules)
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
	cfg := dispatch.Config[*timeout]{ // Parallelism 0: the executor's size, from its Cap
		Run:     (*timeout).run,
		Refused: h.executorRefused,
		Now:     h.now,
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
		w.dispatchExpired(false)
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
		expired, behind := w.expireTimeouts(now)
		w.dispatchExpired(behind)
		if len(w.hooked) > 0 {
			w.runCancelledHooks()
		}
		if now-w.grewAt >= int64(trimAfter) {
			w.trim(now)
		}
		if woken || cancelled || transferred || expired {
			w.lastActive = now / w.wheel.tickDuration // linger: more may come
		}
	}
}

// waitForNextTick waits, as Netty's, for the end of the next tick and
// returns the clock then, or sooner when a producer or Stop wakes it.
// After lingerTime without activity it instead sleeps until the first tick
// with something due, with idle set so that producers wake it, and reports
// whether it was woken from that sleep. It records how late it is back.
func (w *worker) waitForNextTick() (now int64, woken bool) {
	h, wh := w.timer, w.wheel
	for slept := false; ; slept = true {
		now = h.now()
		if lag := now - w.plannedWake; lag > w.maxLag {
			w.maxLag = lag
			h.counters.maxTickLag.Store(lag)
		}
		tick := now / wh.tickDuration // the first tick not ended
		tickEnd := now + min(wh.tickDuration-now%wh.tickDuration, math.MaxInt64-now)
		// A tick before it holds something due, or Stop: on with the pass.
		if slept || wh.tick < tick && wh.earliest < tick || h.state.Load() == timerStopped {
			w.plannedWake = tickEnd // back after this pass by the end of this tick
			return now, woken
		}
		idle := tick-w.lastActive >= w.lingerTicks && w.staged == nil
		if !idle {
			w.plannedWake = tickEnd
		} else {
			w.plannedWake = wh.endOf(max(wh.tick, wh.earliest))
			w.trim(now)
			h.idle.Store(true)
			// A producer that pushed before the flag was visible wakes
			// nobody.
			if (!h.intakeEmpty() || h.state.Load() == timerStopped) && h.idle.CompareAndSwap(true, false) {
				continue
			} // else a producer took the flag and wakes the worker: Sleep returns at once
		}
		// The sleeper's clock reads the timer's time plus the start.
		h.sleeper.Sleep(h.startNanos + min(w.plannedWake, clockwork.Forever-h.startNanos))
		if idle {
			h.idle.Store(false)
			woken = true
		}
	}
}

// processCancelledTasks, as Netty's, unlinks the timeouts Cancel reported
// and files again those a Reset moved earlier; it reports whether it found
// any.
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
		for t, ok := s.reports.Pop(); ok; t, ok = s.reports.Pop() {
			found = true
			switch {
			case t.bucket == 0: // unlinked since: expired, or reported twice
			case t.word.Load()&stateMask == stateCancelled:
				w.wheel.unlink(t)
				if cancelledHookOf(t.task) != nil { // at the end of the pass: it may call Stop, which must find every timeout placed
					w.hooked = append(w.hooked, t)
				}
			default: // a Reset moved it earlier
				w.wheel.refile(t)
			}
		}
	}
	return found
}

// The worker's per-tick budgets, as Netty's 100 000, so producers in a
// tight loop cannot starve expiry: the rest wait, staged, for later ticks.
// Dropping a cancelled one costs far less.
const (
	maxTransfersPerTick = 100_000
	maxDiscardsPerTick  = 10 * maxTransfersPerTick
)

// transferTimeoutsToBuckets, as Netty's, moves new timeouts into the wheel
// while the tick's budgets last, the staged first, and drops those
// cancelled. It stages the rest, and all while any is staged, so that each
// producer's reach the wheel in order. It reports whether it found any.
func (w *worker) transferTimeoutsToBuckets(now int64) (found bool) {
	if verifyEachStep {
		defer w.checkWheel("transferTimeoutsToBuckets")
	}
	if tick := now / w.wheel.tickDuration; tick > w.budgetTick {
		w.transfersLeft, w.discardsLeft, w.budgetTick = maxTransfersPerTick, maxDiscardsPerTick, tick
	}
	head, tail := w.staged, w.stagedTail
	w.staged, w.stagedTail = nil, nil
	found = head != nil
	for i := 0; ; i++ {
		for t := head; t != nil; {
			if w.transfersLeft == 0 || w.discardsLeft == 0 || w.stopped {
				if w.staged == nil {
					w.staged = t
				} else {
					w.stagedTail.next = t
				}
				w.stagedTail = tail
				break
			}
			next := t.next
			t.next = nil
			tw := t.word.Load()
			for tw&stateMask == stateQueued && !t.word.CompareAndSwap(tw, tw&^stateMask|stateScheduled) {
				tw = t.word.Load() // a Reset moved its deadline meanwhile
			}
			if tw&stateMask == stateQueued { // now scheduled, by the deadline it had
				w.wheel.link(t, deadlineOf(tw))
				w.transfersLeft--
			} else { // cancelled while queued
				t.forgetBelow() // a caller keeping it keeps nothing else alive
				if cancelledHookOf(t.task) != nil {
					w.hooked = append(w.hooked, t)
				}
				w.discardsLeft--
			}
			t = next
		}
		if i == len(w.timer.shards) || w.stopped {
			return found
		}
		var unlinked int
		head, tail, unlinked = w.timer.shards[i].take(false)
		found = found || head != nil || unlinked != 0
	}
}

// expireTimeouts, as Netty's HashedWheelBucket.expireTimeouts, expires the
// next tick with anything due if it has ended by now (wheel.expire), then
// claims the due schedules of ScheduleFunc, whose claim calls user code.
// It reports whether it claimed or skipped a run, and whether a tick that
// has ended still holds something due: the worker is behind.
func (w *worker) expireTimeouts(now int64) (claimed, behind bool) {
	if verifyEachStep {
		defer w.checkWheel("expireTimeouts")
	}
	h, wh := w.timer, w.wheel
	if w.stopped {
		return false, false
	}
	tick := now / wh.tickDuration // the first tick not ended
	// Nothing in the skipped ticks' buckets is due in them.
	wh.tick = max(wh.tick, min(wh.earliest, tick))
	if wh.tick >= tick { // not ended
		return false, false
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
	if ex.expired > 0 { // counted, their places freed, before they run: a task may schedule again at the limit
		h.counters.expired.Add(uint64(ex.expired))
		if h.maxPending > 0 {
			h.admitted.Add(-int64(ex.expired))
		}
	}
	claimed = ex.expired+ex.runs+ex.skipped > 0
	if len(wh.schedules) > 0 {
		w.claimFrom = tick * wh.tickDuration
		claimed = w.claimSchedules() || claimed
	}
	return claimed, wh.tick < tick && wh.earliest < tick
}

// A late worker dispatches the runs it collects over the ticks it catches
// up once it has caught up or holds maxDeferredDue: half of what the list
// it keeps holds, so that a tick's runs seldom outgrow that list or the
// slices the dispatcher keeps. Growing a list in a storm is an allocation
// the collector, marking, makes the worker pay for by assisting it, and
// the worker falls further behind. Lists grown past maxKeptDue, the
// dispatcher's bound too, are dropped once none needed that size for
// trimAfter.
const (
	maxDeferredDue = maxKeptDue / 2
	maxKeptDue     = dispatch.MaxKeptTasks
	trimAfter      = time.Second
)

// dispatchExpired hands the claimed runs to the dispatcher, unless the
// worker is behind, catching up the ticks it missed, with fewer than
// maxDeferredDue collected: they then start together once it has caught
// up. With pool.Inline they run here, in deadline order.
func (w *worker) dispatchExpired(behind bool) {
	if len(w.due) == 0 || behind && len(w.due) < maxDeferredDue {
		return
	}
	due := w.due
	w.due = w.due[:0] // emptied first: after an inline task's Goexit the dispatcher has the rest
	if len(due) > maxKeptDue {
		w.grewAt = w.timer.now()
	}
	if w.timer.executor == pool.Inline { // producers reach the worker through several stacks, in no order
		slices.SortStableFunc(due, func(a, b dueRun) int { return cmp.Compare(a.Deadline, b.Deadline) })
	}
	w.dispatcher.Dispatch(due)
}

// dueRun is a claimed run: a timeout and the deadline the run is for, a
// periodic timeout's state word holding its next run's by then.
type dueRun = dispatch.Due[*timeout]

// runCancelledHooks calls the Cancelled hooks of the cancellations so far,
// each taken before it runs so that none runs twice, containing a panic or
// runtime.Goexit: counted and logged, it harms nothing else. It reads the
// list through w: a hook may call Stop, whose shutdown appends to it, or
// runtime.Goexit, after which the next worker goroutine goes on.
func (w *worker) runCancelledHooks() {
	var t *timeout
	returned := false
	defer func() {
		if !returned {
			r := recover()
			w.timer.userCodeFailed(userHook, t, r)
			if r != nil { // a panic: the rest run here
				w.runCancelledHooks()
			}
		}
	}()
	for w.hookNext < len(w.hooked) {
		t = w.hooked[w.hookNext]
		w.hooked[w.hookNext] = nil
		w.hookNext++
		cancelledHookOf(t.task).Cancelled(t)
	}
	w.hooked, w.hookNext = w.hooked[:0], 0
	returned = true
}

// trim drops the lists the worker and the dispatcher grew for a storm.
func (w *worker) trim(now int64) {
	if cap(w.due) > maxKeptDue && len(w.due) == 0 {
		w.due = nil
	}
	if cap(w.hooked) > maxKeptDue && len(w.hooked) == 0 {
		w.hooked = nil
	}
	w.dispatcher.TrimSpares(now)
}

// checkWheel panics, naming step, if wheel.verifyStep finds the wheel
// broken after it.
func (w *worker) checkWheel(step string) {
	if err := w.wheel.verifyStep(); err != nil {
		panic(fmt.Sprintf("hashedwheel: wheeltimer_verify: the wheel's invariants are broken after %s: %v", step, err))
	}
}
