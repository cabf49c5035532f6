package hashedwheel

import "github.com/wheeltimer/wheeltimer/mpsc"

// maxTransfersPerTick bounds the new timeouts moved into the wheel per
// tick, so that producers adding in a tight loop cannot starve expiry; the
// rest wait for the following ticks (Netty's 100 000).
const maxTransfersPerTick = 100_000

// maxDiscardsPerTick bounds the timeouts cancelled while queued that one
// tick drops. Netty counts them against the transfer limit, so schedule and
// cancel churn faster than 100 000 per tick piled up in the queue; dropping
// one costs far less than placing one, so they get a limit of their own.
const maxDiscardsPerTick = 10 * maxTransfersPerTick

// maxDiscardsPerCatchUp bounds one pass of catchUpIntake, a fraction of a
// millisecond of work, so that the worker looks at the clock often enough
// to start the next tick on time even with a 1ms tick.
const maxDiscardsPerCatchUp = 1 << 14

// transfer moves queued timeouts into the wheel, while the tick's transfer
// budget lasts, and drops those cancelled while queued, at most discards of
// them, starting from a different shard each call. It reports whether it
// found anything, and records in w.backlog whether it stopped at the
// discard limit with timeouts still queued.
func (w *worker) transfer(discards int) bool {
	h := w.timer
	transfersBefore, discardsBefore := w.transfersLeft, discards
	w.backlog = false
	var popped [transferBatch]*timeout
	for i := 0; i < len(h.shards) && w.transfersLeft > 0; i++ {
		q := h.shards[(w.nextShard+i)&int(h.shardMask)].intake
		for w.transfersLeft > 0 {
			if discards == 0 {
				w.backlog = true
				break
			}
			// Each popped timeout takes from one of the two limits.
			batch := popped[:min(transferBatch, w.transfersLeft, discards)]
			n := popBatch(q, batch)
			if n == 0 {
				break
			}
			// The timeouts were written on other cores: read their states
			// first, with plain loads the processor overlaps, instead of
			// paying one cache miss after another under compare-and-swap.
			var states [transferBatch]int32
			for j, t := range batch[:n] {
				states[j] = t.state.Load()
			}
			for j, t := range batch[:n] {
				if states[j] != stateCancelled && t.take() {
					w.wheel.schedule(t)
					w.transfersLeft--
				} else { // cancelled while queued
					w.cancelled(t)
					discards--
				}
				batch[j] = nil
			}
			w.runHooks()
			if w.stopped { // a hook stopped the timer
				w.publishCancelled()
				return true
			}
		}
	}
	w.nextShard++
	w.publishCancelled()
	return w.transfersLeft < transfersBefore || discards < discardsBefore
}

// catchUpIntake keeps dropping timeouts cancelled while queued, and
// transferring within what is left of the tick's budget, between the end of
// a tick that hit its discard limit and the end of the next, at instant end.
// Schedule-and-cancel churn faster than the discard limit would otherwise
// grow the queues, and the memory they hold, without bound. A Stop ends it
// at once, as it ends the worker's sleep.
func (w *worker) catchUpIntake(end int64) {
	h := w.timer
	for w.backlog && !w.stopped && h.state.Load() != timerStopped && h.clock.Now()-h.startNanos < end {
		w.transfer(maxDiscardsPerCatchUp)
	}
	w.backlog = false
}

// transferBatch is how many queued timeouts transfer pops at a time.
const transferBatch = 64

// popBatch pops up to len(buf) values of q into buf and returns how many.
func popBatch(q *mpsc.Queue[timeout], buf []*timeout) int {
	for i := range buf {
		t, ok := q.Pop()
		if !ok {
			return i
		}
		buf[i] = t
	}
	return len(buf)
}
