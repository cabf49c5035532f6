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

// lingerTime is how long a worker keeps ticking after its last activity
// before it sleeps until the next due timeout: timeouts made and cancelled
// back to back then do not pay a wake-up each.
const lingerTime = 50 * time.Millisecond

// worker is the goroutine that owns the wheel. Everything here but the
// timer's atomics is touched by the worker alone.
type worker struct {
	timer         *HashedWheelTimer
	wheel         *wheel
	dispatcher    *dispatch.Dispatcher[*timeout]
	due           []*timeout // claimed timeouts not yet dispatched
	sortScratch   []deadlineKey
	staged        staging // collected beyond a tick's budget, not yet in the wheel
	transfersLeft int     // of the current tick's maxTransfersPerTick
	budgetTick    int64   // the tick transfersLeft was renewed for
	stopped       bool    // shutdown has run
	lastActive    int64   // the tick of the last pass that did something
	lingerTicks   int64   // quiet ticks before the worker sleeps until due
	maxLag        int64
	plannedWake   int64      // when the next pass is due: the end of the tick it waits for
	grewAt        int64      // when a dispatch last needed a storm-sized list
	hooked        []*timeout // completed cancellations whose hook is yet to run
	hookNext      int        // hooked[:hookNext] have run or are running
	claimFrom     int64      // the start of the first tick not ended at the pass's now, for claimSchedules
}

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
		Slow:    h.config.tickDuration, // a task that starts a tick after its hand-off waited for a goroutine
	}
	if h.executor != pool.Inline {
		cfg.Executor = h.executor
	}
	if t, ok := h.sleeper.(clockwork.WorkTracker); ok { // a fake clock waits for the tasks
		cfg.Started, cfg.Finished = t.Started, t.Finished
	}
	if m := h.watcher; m != nil && h.executor != pool.Inline {
		// A fake clock marks a task's goroutine, to refuse Advance there;
		// it knows the worker's, where pool.Inline runs them.
		cfg.Run = func(t *timeout) {
			defer m.Exit(m.Enter())
			t.run()
		}
	}
	w.dispatcher = dispatch.New(cfg)
	return w
}

// run is the worker goroutine; loop has its steps.
//
// A task run inline, or a Cancelled hook, that calls runtime.Goexit ends
// the worker's goroutine: a new one takes over where it stopped.
func (w *worker) run() {
	h := w.timer
	h.workerID.Store(goid.Current())
	returned := false
	defer func() {
		if returned {
			w.exit()
		} else {
			go w.run()
		}
	}()
	w.finishInterrupted()
	w.loop()
	returned = true
}

// finishInterrupted finishes what a task, hook or Scheduler's Next that
// called runtime.Goexit interrupted: the rest of an inline dispatch, the
// schedules to claim and the tasks claimed with them, the hooks to call.
func (w *worker) finishInterrupted() {
	w.dispatcher.RunInline()
	if len(w.wheel.schedules) > 0 {
		w.claimSchedules()
		w.dispatchExpired(w.timer.now())
	}
	w.runCancelledHooks()
}

// loop runs, until Stop, the steps of Netty's Worker.run: wait for the
// next tick, process the cancellations, move new timeouts into their
// buckets, expire the tick's bucket; then hand the expired tasks to the
// executor and call the Cancelled hooks, after them so that a slow hook
// delays no task due in the tick. Cancellations come first, as in Netty
// 4.2, so that a timeout cancelled before its tick is never claimed and
// is counted out before the tick's tasks run.
func (w *worker) loop() {
	h := w.timer
	for !w.stopped {
		now, woken := w.waitForNextTick()
		if h.state.Load() == timerStopped && !w.stopped {
			w.shutdown()
			return
		}
		cancelled := w.processCancelledTasks()
		transferred := w.transferTimeoutsToBuckets(now)
		expired := w.expireTimeouts(now)
		w.dispatchExpired(now)
		w.runCancelledHooks()
		w.trimAfterStorm(now)
		if woken || cancelled || transferred || expired {
			w.lastActive = w.wheel.tickOf(now) // linger: more may come
		}
	}
}

// waitForNextTick waits, as Netty's does, for the end of the next tick
// that can expire something, and returns the clock then; it returns sooner
// when a producer wakes the worker with work for it, or Stop does.
//
// While anything happened in the last lingerTime, the worker waits for the
// end of each tick. Then it sleeps until the end of the first tick with
// something due, forever if nothing is pending, and producers wake it for
// every new timeout and every report, so that none waits for that tick.
// It reports whether it slept until due and was woken: then the worker
// lingers again.
func (w *worker) waitForNextTick() (now int64, woken bool) {
	h, wh := w.timer, w.wheel
	for slept := false; ; slept = true {
		now = h.now()
		w.countLag(now)
		if slept || now >= wh.endOf(w.nextTick(now)) || h.state.Load() == timerStopped {
			w.plannedWake = wh.endOf(wh.tickOf(now)) // back after this pass by the end of this tick
			return now, woken
		}
		lingering := w.wheel.tickOf(now)-w.lastActive < w.lingerTicks || w.staged.len() > 0
		until := wh.endOf(max(wh.tick, wh.earliest))
		if lingering {
			until = wh.endOf(w.nextTick(now))
		}
		w.plannedWake = until
		if lingering {
			h.sleeper.Sleep(instant(h.startNanos, until))
		} else {
			woken = w.sleepUntilDue(until)
		}
	}
}

// sleepUntilDue sleeps until end, the end of the first tick with anything
// due, telling producers to wake it meanwhile. It reports whether it slept.
func (w *worker) sleepUntilDue(end int64) (slept bool) {
	h := w.timer
	w.trim()
	h.idle.Store(true)
	// A producer that pushed before it could see the flag will not wake us:
	// look again now that the flag is visible.
	if !h.intakeEmpty() || h.state.Load() == timerStopped {
		if h.idle.CompareAndSwap(true, false) {
			return false
		}
		// A producer took the flag and is waking us: Sleep returns at once.
	}
	h.sleeper.Sleep(instant(h.startNanos, end))
	h.idle.Store(false)
	return true
}

// nextTick returns the tick the worker expires next, skipping, up to the
// tick that covers now, those before the first with something due.
func (w *worker) nextTick(now int64) int64 {
	wh := w.wheel
	return max(wh.tick, min(wh.earliest, wh.tickOf(now)))
}

// processCancelledTasks is the step of a tick that unlinks the timeouts
// cancelled in a bucket, as Netty's processCancelledTasks, and files again
// those a Reset moved earlier. It reports whether it found any.
func (w *worker) processCancelledTasks() (found bool) {
	if verifyEachStep {
		defer w.checkWheel("processCancelledTasks")
	}
	for i := range w.timer.shards {
		s := &w.timer.shards[i]
		for !w.stopped {
			t, ok := s.cancelled.Pop()
			if !ok {
				break
			}
			found = true
			w.wheel.remove(t)
			w.cancellationDone(t)
		}
		for !w.stopped {
			t, ok := s.moved.Pop()
			if !ok {
				break
			}
			found = true
			// Still scheduled, it is in a bucket; cancelled or expired
			// since, it is or was unlinked by its own path.
			if t.currentState() == stateScheduled {
				w.wheel.refile(t)
			}
		}
	}
	return found
}

// cancellationDone records that the timeout t, cancelled (and counted by
// its Cancel), has left the wheel or the intake for good: runCancelledHooks
// calls its Cancelled hook, if it has one, once the pass has placed or
// dropped the timeouts in hand and handed the due tasks over: a hook may
// call Stop, which must find every timeout on an intake stack, staged,
// reported or in the wheel, and a slow hook must not delay the tasks due
// in the same tick.
func (w *worker) cancellationDone(t *timeout) {
	if cancelledHookOf(t.task) != nil {
		w.hooked = append(w.hooked, t)
	}
}

// dropCancelledQueued completes the cancellation of t, which was cancelled
// before the worker took it in.
func (w *worker) dropCancelledQueued(t *timeout) {
	t.forgetBelow()
	w.cancellationDone(t)
}

// maxTransfersPerTick bounds the new timeouts moved into the wheel per
// tick, counting those moved between it and the next, so that producers
// adding in a tight loop cannot starve expiry; the rest wait, staged, for
// the following ticks (Netty's 100 000).
const maxTransfersPerTick = 100_000

// maxDiscardsPerTick bounds the staged timeouts, cancelled after the
// worker collected them, that one tick drops on its way to the timeouts it
// moves; the rest are dropped by the ticks that follow. Dropping one costs
// far less than placing one, so they get a limit of their own.
const maxDiscardsPerTick = 10 * maxTransfersPerTick

// transferBatch is how many staged timeouts are moved at a time.
const transferBatch = 64

// transferTimeoutsToBuckets is the step of a tick that moves new timeouts
// into the wheel, as Netty's: first those staged, oldest first, then those
// on the intake stacks, at most maxTransfersPerTick a tick. Those
// cancelled before they got there are dropped. The budget is renewed once
// per tick that covers now; a pass between ticks uses what is left of it.
// It reports whether it took in or dropped any.
func (w *worker) transferTimeoutsToBuckets(now int64) (found bool) {
	if verifyEachStep {
		defer w.checkWheel("transferTimeoutsToBuckets")
	}
	if tick := w.wheel.tickOf(now); tick > w.budgetTick {
		w.transfersLeft = maxTransfersPerTick
		w.budgetTick = tick
	}
	found = w.transferStaged()
	if !w.stopped && w.collectIntake() {
		found = true
	}
	return found
}

// transferStaged moves staged timeouts into the wheel while the budget
// lasts, dropping at most maxDiscardsPerTick cancelled ones. It reports
// whether there were any.
func (w *worker) transferStaged() (found bool) {
	discards := maxDiscardsPerTick
	var buf [transferBatch]*timeout
	for w.transfersLeft > 0 && discards > 0 && !w.stopped {
		n := w.staged.pop(buf[:min(transferBatch, w.transfersLeft, discards)])
		if n == 0 {
			break
		}
		found = true
		// The timeouts were written on other cores and staged long ago:
		// load their states first, with plain loads the processor overlaps,
		// instead of one cache miss after another under compare-and-swap.
		var states [transferBatch]uint64
		for j, t := range buf[:n] {
			states[j] = t.currentState()
		}
		for j, t := range buf[:n] {
			if states[j] != stateCancelled && w.wheel.insert(t) {
				w.transfersLeft--
			} else { // cancelled since it was staged
				w.dropCancelledQueued(t)
				discards--
			}
			buf[j] = nil
		}
	}
	return found
}

// collectIntake collects every timeout off the intake stacks, oldest first
// on each: it drops those cancelled while queued and moves the others into
// the wheel while the budget lasts. It stages the rest, still queued, and
// every timeout while any is staged, so that they reach the wheel in the
// order they were made. It reports whether there were any.
func (w *worker) collectIntake() (found bool) {
	h := w.timer
	for i := 0; i < len(h.shards) && !w.stopped; i++ {
		batch := h.shards[i].collect()
		if batch.head != nil || batch.unlinked != 0 {
			found = true
		}
		for t := batch.pop(); t != nil; t = batch.pop() {
			switch {
			case t.currentState() == stateCancelled:
				w.dropCancelledQueued(t)
			case w.transfersLeft > 0 && w.staged.len() == 0:
				if w.wheel.insert(t) {
					w.transfersLeft--
				} else { // cancelled just now
					w.dropCancelledQueued(t)
				}
			default:
				w.staged.push(t)
			}
		}
	}
	return found
}

// expireTimeouts is the step that expires the next tick's bucket, as
// Netty's HashedWheelBucket.expireTimeouts, if that tick has ended by now,
// and moves to the tick after it. Ticks before the first with anything due
// are skipped: their buckets hold nothing due in them. It reports whether
// it claimed or skipped any run.
func (w *worker) expireTimeouts(now int64) (claimed bool) {
	if verifyEachStep {
		defer w.checkWheel("expireTimeouts")
	}
	if w.stopped {
		return false
	}
	h, wh := w.timer, w.wheel
	wh.skipIdleTicks(wh.tickOf(now))
	if now < wh.tickEnd() {
		return false
	}
	due, ex := wh.expire(now, w.due)
	w.due = due
	wh.advance()
	if ex.misplaced > 0 {
		if verifyEachStep {
			panic(fmt.Sprintf("hashedwheel: wheeltimer_verify: %d timeouts found due before their deadline in tick %d",
				ex.misplaced, wh.tick-1))
		}
		h.config.logger.Error("hashedwheel: timeouts found due before their deadline; kept until due",
			"count", ex.misplaced, "tick", wh.tick-1)
	}
	w.countTick(ex)
	claimed = ex.expired+ex.runs+ex.skipped > 0
	if len(wh.schedules) > 0 {
		w.claimFrom = wh.tickOf(now) * wh.tickDuration
		claimed = w.claimSchedules() || claimed
	}
	return claimed
}

// countLag counts how late the worker is at now for the tick it was due
// back at (plannedWake), whether or not anything was due in that tick: a
// pass that a hook held up, or a wake-up the process was too busy for.
func (w *worker) countLag(now int64) {
	if lag := now - w.plannedWake; lag > w.maxLag {
		w.maxLag = lag
		w.timer.counters.maxTickLag.Store(lag)
	}
}

// countTick updates the counters after a tick's walk did ex.
func (w *worker) countTick(ex expiry) {
	h := w.timer
	h.counters.ticks.Add(1)
	w.countExpired(ex.expired)
	h.counters.periodicSkipped.Add(uint64(ex.skipped))
}

// countExpired counts n timeouts expired.
func (w *worker) countExpired(n int) {
	h := w.timer
	if n > 0 {
		// Count them out before they run, so that a task can schedule
		// again at the pending limit (Netty a0e375bbc0).
		h.counters.expired.Add(uint64(n))
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

// runCancelledHooks calls the Cancelled hooks of the cancellations counted
// so far.
func (w *worker) runCancelledHooks() {
	// A queue read through w at each step, never a copy of the slice: a
	// hook may call Stop, whose shutdown appends to the list (reallocating
	// it) and runs the rest itself, or runtime.Goexit, after which the
	// worker's next goroutine does. Each entry is taken before its hook
	// runs, so that none runs twice.
	for w.hookNext < len(w.hooked) {
		t := w.hooked[w.hookNext]
		w.hooked[w.hookNext] = nil
		w.hookNext++
		w.timer.runCancelledHook(t)
	}
	w.hooked, w.hookNext = w.hooked[:0], 0
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

// checkWheel panics, naming step, if the check after it finds the wheel
// broken: the check of the wheeltimer_verify build tag (see
// verifyEachStep and wheel.verifyStep).
func (w *worker) checkWheel(step string) {
	w.wheelBroken(step, w.wheel.verifyStep())
}

// wheelBroken panics, naming step, if err, a check's, is not nil.
func (w *worker) wheelBroken(step string, err error) {
	if err != nil {
		panic(fmt.Sprintf("hashedwheel: wheeltimer_verify: the wheel's invariants are broken after %s: %v", step, err))
	}
}

// executorRefused counts and logs an executor's refusal of a drain
// function, which then runs on a goroutine of its own.
func (h *HashedWheelTimer) executorRefused(err error) {
	h.counters.executorFailures.Add(1)
	h.config.logger.Warn("hashedwheel: executor refused expired tasks; running them on a new goroutine",
		"error", err)
}
