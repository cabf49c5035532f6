package hashedwheel

import (
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
	grewAt        int64      // when a dispatch last needed a storm-sized list
	uncounted     int        // completed cancellations not yet counted
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
	}
	cfg := dispatch.Config[*timeout]{ // Parallelism 0: the executor's size, from its Cap
		Run:     (*timeout).run,
		Refused: h.executorRefused,
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
		if slept || now >= wh.endOf(w.nextTick(now)) || h.state.Load() == timerStopped {
			return now, woken
		}
		lingering := w.wheel.tickOf(now)-w.lastActive < w.lingerTicks || w.staged.len() > 0
		until := wh.endOf(max(wh.tick, wh.earliest))
		if lingering {
			until = wh.endOf(w.nextTick(now))
		}
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

// executorRefused counts and logs an executor's refusal of a drain
// function, which then runs on a goroutine of its own.
func (h *HashedWheelTimer) executorRefused(err error) {
	h.counters.executorFailures.Add(1)
	h.config.logger.Warn("hashedwheel: executor refused expired tasks; running them on a new goroutine",
		"error", err)
}
