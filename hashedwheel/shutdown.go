package hashedwheel

// shutdown ends the timer's work: it closes the queues, and cancels and
// returns every timeout that neither expired nor was cancelled. It runs
// on the worker goroutine, in the worker loop or in a Stop called by a task
// running inline.
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
	for i := range h.shards {
		q := h.shards[i].intake
		q.Close()
		drain(q, func(t *timeout) {
			if !stop(t) { // cancelled while queued
				h.finishCancel(t)
			}
		})
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
