package hashedwheel

// processCancelledTasks is the step of a tick that unlinks the timeouts
// cancelled in a bucket, as Netty's processCancelledTasks, and files again
// those a Reset moved earlier. It reports whether it found any.
func (w *worker) processCancelledTasks() (found bool) {
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
		w.countCancellations()
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

// cancellationDone records that the timeout t, cancelled, has left the
// wheel or the intake for good. countCancellations publishes the count;
// runCancelledHooks calls its Cancelled hook, if it has one, once the
// pass has placed or dropped the timeouts in hand and handed the due tasks
// over: a hook may call Stop, which must find every timeout on an intake
// stack, staged, reported or in the wheel, and a slow hook must not delay
// the tasks due in the same tick.
func (w *worker) cancellationDone(t *timeout) {
	w.uncounted++
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

// countCancellations counts the cancellations completed since the last
// call and releases their places under the pending limit: before any of
// their hooks runs, so that a hook may schedule again at the limit.
func (w *worker) countCancellations() {
	if w.uncounted > 0 {
		w.timer.countCancelled(w.uncounted)
		w.uncounted = 0
	}
}

// runCancelledHooks calls the Cancelled hooks of the cancellations counted
// so far.
func (w *worker) runCancelledHooks() {
	w.countCancellations()
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
		w.countCancellations()
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
		w.uncounted += batch.unlinked
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
		w.countCancellations()
	}
	return found
}
