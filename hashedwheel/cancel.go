package hashedwheel

// reportCancelled hands a cancelled timeout that is in a bucket to the
// worker. If the worker has stopped taking cancellations, the timer is
// stopped and the cancellation is finished here.
func (h *HashedWheelTimer) reportCancelled(t *timeout) {
	if !h.pickShard().cancels.Push(t) {
		h.finishCancel(t)
	}
}

// finishCancel completes a processed cancellation: it counts the timeout
// out of the pending set and calls the task's Cancelled hook, if any.
func (h *HashedWheelTimer) finishCancel(t *timeout) {
	h.counters.cancelled.Add(1)
	if h.maxPending > 0 {
		h.admitted.Add(-1)
	}
	hook, ok := t.task.(cancelledHook)
	if !ok {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			h.config.logger.Error("hashedwheel: Cancelled hook panicked",
				"timeout", t, "panic", r)
		}
	}()
	hook.Cancelled(t)
}
