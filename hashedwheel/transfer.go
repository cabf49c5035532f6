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

// transfer moves queued timeouts into the wheel, at most
// maxTransfersPerTick of them, and drops those cancelled while queued, at
// most maxDiscardsPerTick, starting from a different shard each tick. It
// reports whether it found anything.
func (w *worker) transfer() bool {
	h := w.timer
	transfers, discards := maxTransfersPerTick, maxDiscardsPerTick
	var popped [transferBatch]*timeout
	for i := 0; i < len(h.shards) && transfers > 0 && discards > 0; i++ {
		q := h.shards[(w.nextShard+i)&int(h.shardMask)].intake
		for transfers > 0 && discards > 0 {
			// Each popped timeout takes from one of the two limits.
			batch := popped[:min(transferBatch, transfers, discards)]
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
					transfers--
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
	return transfers < maxTransfersPerTick || discards < maxDiscardsPerTick
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
