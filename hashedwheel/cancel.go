package hashedwheel

// reportCancelled hands the worker a timeout in a bucket that Cancel
// cancelled, for it to unlink. Once the worker has stopped taking them,
// the timer is stopped and the cancellation is completed here.
func (h *HashedWheelTimer) reportCancelled(t *timeout) {
	index, ok := h.shardOf(t).cancelled.Push(t)
	if !ok {
		h.countCancelled(1)
		h.runCancelledHook(t)
		return
	}
	h.nudgeWorker(index + 1)
}

// reportMovedEarlier hands the worker a timeout in a bucket that Reset
// moved earlier, for it to file again. Once the worker has stopped taking
// them, the timer is stopped and nothing needs doing.
func (h *HashedWheelTimer) reportMovedEarlier(t *timeout) {
	if index, ok := h.shardOf(t).moved.Push(t); ok {
		h.nudgeWorker(index + 1)
	}
}

// countCancelled counts n processed cancellations and releases their
// places under the pending limit, in that order, so that a snapshot never
// finds more pending timeouts than the limit.
func (h *HashedWheelTimer) countCancelled(n int) {
	h.counters.addProcessed(&h.counters.cancelled, uint64(n))
	if h.maxPending > 0 {
		h.admitted.Add(-int64(n))
	}
}

// runCancelledHook calls the task's Cancelled hook, if it has one,
// recovering and logging a panic.
func (h *HashedWheelTimer) runCancelledHook(t *timeout) {
	hook := cancelledHookOf(t.task)
	if hook == nil {
		return
	}
	returned := false
	defer h.afterUserCode("Cancelled hook", t, &returned)
	hook.Cancelled(t)
	returned = true
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
	// Each entry is cleared before its hook runs: a hook may call Stop,
	// which runs the rest, or runtime.Goexit, after which the worker's
	// next goroutine does.
	for i, t := range w.hooked {
		if t == nil {
			continue
		}
		w.hooked[i] = nil
		w.timer.runCancelledHook(t)
	}
	w.hooked = w.hooked[:0]
}
