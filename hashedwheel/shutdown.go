package hashedwheel

import (
	"runtime"

	"github.com/wheeltimer/wheeltimer/mpsc"
)

// shutdown ends the timer's work: it closes the intake stacks and the
// cancellation queues, and cancels and returns every timeout that neither
// expired nor was cancelled. It runs on the worker goroutine, in the worker
// loop or in a Stop called by a task running inline.
func (w *worker) shutdown() []Timeout {
	h := w.timer
	w.stopped = true
	result := make([]Timeout, 0, w.wheel.size)
	stop := func(t *timeout) bool {
		if !t.cancelForStop() {
			return false
		}
		result = append(result, t)
		return true
	}
	stopQueued := func(t *timeout) {
		if !stop(t) { // cancelled while queued
			t.forgetBelow()
			h.finishCancel(t)
		}
	}
	w.staged.drain(stopQueued)
	for i := range h.shards {
		taken := h.shards[i].close()
		h.countCancelled(taken.unlinked)
		for t := taken.pop(); t != nil; t = taken.pop() {
			stopQueued(t)
		}
	}
	// Timeouts cancelled in a bucket are skipped here: their cancellation
	// is in a cancels queue, drained below, or finished by Cancel itself
	// once the queue is closed.
	w.wheel.clear(func(t *timeout) { stop(t) })
	for i := range h.shards {
		q := h.shards[i].cancels
		q.Close()
		drain(q, h.finishCancel)
	}
	h.counters.returnedByStop.Add(uint64(len(result)))
	if h.maxPending > 0 {
		h.admitted.Add(-int64(len(result)))
	}
	return result
}

// drain pops every value of a closed queue, waiting for pushes that had
// claimed their place before it closed.
func drain(q *mpsc.Queue[timeout], f func(*timeout)) {
	for !q.Empty() {
		if t, ok := q.Pop(); ok {
			f(t)
		} else {
			runtime.Gosched()
		}
	}
}
