package hashedwheel

// reportCancelled hands a cancelled timeout that is in a bucket to the
// worker. If the worker has stopped taking cancellations, the timer is
// stopped and the cancellation is finished here.
func (h *HashedWheelTimer) reportCancelled(t *timeout) {
	if !h.shardOf(t).cancels.Push(t) {
		h.finishCancel(t)
	}
}

// finishCancel completes a processed cancellation: it counts the timeout
// out of the pending set, then calls the task's Cancelled hook, if any, so
// that the hook may schedule again at the pending limit.
func (h *HashedWheelTimer) finishCancel(t *timeout) {
	h.countCancelled(1)
	if hook := cancelledHookOf(t.task); hook != nil {
		h.callCancelled(hook, t)
	}
}

// countCancelled counts n processed cancellations.
func (h *HashedWheelTimer) countCancelled(n int) {
	h.counters.cancelled.Add(uint64(n))
	if h.maxPending > 0 {
		h.admitted.Add(-int64(n))
	}
}

// cancelledHookOf returns the task's Cancelled hook, or nil. The function
// adapters, the commonest tasks, are recognised without the dearer
// interface assertion.
func cancelledHookOf(task TimerTask) cancelledHook {
	switch task.(type) {
	case funcTask, TaskFunc:
		return nil
	}
	hook, _ := task.(cancelledHook)
	return hook
}

// callCancelled calls a Cancelled hook, recovering and logging a panic.
func (h *HashedWheelTimer) callCancelled(hook cancelledHook, t *timeout) {
	defer func() {
		if r := recover(); r != nil {
			h.config.logger.Error("hashedwheel: Cancelled hook panicked",
				"timeout", t, "panic", r)
		}
	}()
	hook.Cancelled(t)
}
