package hashedwheel

// reportCancelled hands a cancelled timeout that is in a bucket to the
// worker. If the worker has stopped taking cancellations, the timer is
// stopped and the cancellation is finished here.
func (h *HashedWheelTimer) reportCancelled(t *timeout) {
	index, ok := h.shardOf(t).cancels.Push(t)
	if !ok {
		h.finishCancel(t)
		return
	}
	h.queued(index + 1)
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
	defer h.logPanic("Cancelled hook", t)
	hook.Cancelled(t)
}

// processCancellations unlinks every timeout whose cancellation reached the
// worker.
func (w *worker) processCancellations() {
	for i := range w.timer.shards {
		q := w.timer.shards[i].cancels
		for !w.stopped {
			t, ok := q.Pop()
			if !ok {
				break
			}
			w.wheel.remove(t)
			w.cancelled(t)
			w.runHooks()
		}
	}
	w.publishCancelled()
}

// cancelled completes the cancellation of t, except for its Cancelled
// hook, which runHooks calls once the timeouts in hand are placed or
// dropped: a hook may call Stop, and Stop must find every timeout on an
// intake stack, staged, in a queue or in the wheel. Timeouts without a hook
// are counted in bulk by publishCancelled.
func (w *worker) cancelled(t *timeout) {
	if cancelledHookOf(t.task) == nil {
		w.uncounted++
		return
	}
	w.hooked = append(w.hooked, t)
}

// droppedQueued completes the cancellation of t, which was cancelled while
// queued, as the worker drops it.
func (w *worker) droppedQueued(t *timeout) {
	t.forgetBelow()
	w.cancelled(t)
}

// runHooks counts the cancellations with a Cancelled hook and calls the
// hooks, each only once its timeout is counted out, as a hook may schedule
// at the pending limit.
func (w *worker) runHooks() {
	for i, t := range w.hooked {
		w.hooked[i] = nil
		w.timer.finishCancel(t)
	}
	w.hooked = w.hooked[:0]
}

// publishCancelled counts the cancellations completed since the last call.
func (w *worker) publishCancelled() {
	if w.uncounted > 0 {
		w.timer.countCancelled(w.uncounted)
		w.uncounted = 0
	}
}
