package hashedwheel

// maxTransfersPerTick bounds the new timeouts moved into the wheel per
// tick, counting those moved between it and the next, so that producers
// adding in a tight loop cannot starve expiry; the rest wait, staged, for
// the following ticks (Netty's 100 000).
const maxTransfersPerTick = 100_000

// maxDiscardsPerTick bounds the staged timeouts, cancelled after the
// worker took them in, that one tick drops on its way to the timeouts it
// moves; the rest are dropped by the ticks that follow. Netty counts them
// against the transfer limit; dropping one costs far less than placing
// one, so they get a limit of their own.
const maxDiscardsPerTick = 10 * maxTransfersPerTick

// transferBatch is how many staged timeouts are moved at a time.
const transferBatch = 64

// transfer is the step of a tick that moves new timeouts into the wheel:
// first those staged, oldest first, then those on the intake stacks, at
// most maxTransfersPerTick in all. Those cancelled before they got there
// are dropped; of the staged ones, at most maxDiscardsPerTick. It reports
// whether it moved or dropped anything.
func (w *worker) transfer() bool {
	w.transfersLeft = maxTransfersPerTick
	discards := maxDiscardsPerTick
	active := false
	var buf [transferBatch]*timeout
	for w.transfersLeft > 0 && discards > 0 && !w.stopped {
		n := w.staged.take(buf[:min(transferBatch, w.transfersLeft, discards)])
		if n == 0 {
			break
		}
		active = true
		// The timeouts were written on other cores and staged long ago:
		// read their states first, with plain loads the processor
		// overlaps, instead of paying one cache miss after another under
		// compare-and-swap.
		var states [transferBatch]uint32
		for j, t := range buf[:n] {
			states[j] = t.currentState()
		}
		for j, t := range buf[:n] {
			if states[j] != stateCancelled && w.wheel.schedule(t) {
				w.transfersLeft--
			} else { // cancelled since it was staged
				w.droppedQueued(t)
				discards--
			}
			buf[j] = nil
		}
		// After the batch is in the wheel: a hook may call Stop, which
		// must find every timeout on a stack, staged or in the wheel.
		w.runHooks()
	}
	w.publishCancelled()
	if !w.stopped && w.takeIntake() {
		active = true
	}
	return active
}

// takeIntake takes every timeout off the intake stacks, oldest first on
// each: it drops those cancelled while queued and moves the others into
// the wheel while the current tick's transfer budget lasts. It stages the
// rest, still queued, for the ticks that follow, and so every timeout
// while any is staged, so that they reach the wheel in the order they were
// made. It reports whether it took anything.
func (w *worker) takeIntake() bool {
	h := w.timer
	took := false
	for i := 0; i < len(h.shards) && !w.stopped; i++ {
		taken := h.shards[i].takeAll()
		took = took || taken.head != nil
		w.uncounted += taken.unlinked
		for t := taken.pop(); t != nil; t = taken.pop() {
			switch {
			case t.currentState() == stateCancelled:
				w.droppedQueued(t)
			case w.transfersLeft > 0 && w.staged.len() == 0:
				if w.wheel.schedule(t) {
					w.transfersLeft--
				} else { // cancelled just now
					w.droppedQueued(t)
				}
			default:
				w.staged.push(t)
			}
		}
		// After the taken timeouts are placed: a hook may call Stop.
		w.runHooks()
	}
	w.publishCancelled()
	return took
}

// takeInBetweenTicks does the tick's work that need not wait for the tick:
// it unlinks the timeouts whose cancellation was reported, and takes in the
// intake stacks within what is left of the last tick's transfer budget. It
// runs when a producer wakes the worker because a stack or a queue has
// taken in wakeEvery more, so that what producers cancel is released
// within a few thousand pushes instead of at the next tick.
func (w *worker) takeInBetweenTicks() {
	w.processCancellations()
	if !w.stopped {
		w.takeIntake()
	}
}
