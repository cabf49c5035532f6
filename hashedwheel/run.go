package hashedwheel

import (
	"fmt"
)

// run runs the task of a claimed timeout: once, or, for a periodic one,
// as its run marks say (see periodic.go).
func (t *timeout) run() {
	if t.period != 0 {
		t.runPeriodic()
		return
	}
	t.runTask()
}

// runTask runs the task, recovering and logging a panic.
func (t *timeout) runTask() {
	returned := false
	defer t.timer.afterUserCode(userTask, t, &returned)
	t.task.Run(t)
	returned = true
}

// afterUserCode, deferred after a task or hook of t that sets *returned
// as it returns, recovers a panic and counts and logs it with its stack,
// as net/http does for a handler, and counts and logs a call of
// runtime.Goexit, which cannot be stopped: the goroutine ends, and the
// dispatcher or the worker carries on with another. A user's task or hook
// never takes the timer down.
func (h *HashedWheelTimer) afterUserCode(what userCode, t *timeout, returned *bool) {
	if *returned {
		return
	}
	if r := recover(); r != nil {
		h.userCodePanicked(what, t, r)
		return
	}
	h.userCodeExited(what, t)
}

// runCancelledHook calls the task's Cancelled hook, if it has one,
// recovering and logging a panic.
func (h *HashedWheelTimer) runCancelledHook(t *timeout) {
	hook := cancelledHookOf(t.task)
	if hook == nil {
		return
	}
	returned := false
	defer h.afterUserCode(userHook, t, &returned)
	hook.Cancelled(t)
	returned = true
}

// cancelledHookOf returns the task's Cancelled hook, or nil. The function
// adapters, the commonest tasks, are recognised without the dearer
// interface assertion.
func cancelledHookOf(task TimerTask) cancelledHook {
	switch task.(type) {
	case funcTask, TaskFunc, *everyTask:
		return nil
	}
	hook, _ := task.(cancelledHook)
	return hook
}

// runPeriodic runs the claimed run of a periodic timeout, unless a Reset,
// Cancel or Stop revoked it, then the run owed meanwhile, if any.
func (t *timeout) runPeriodic() {
	if !t.startRun() {
		return
	}
	ended := false
	defer func() {
		if !ended { // the task called runtime.Goexit: no run is left marked
			t.word.And(^uint64(claimedBit | runningBit))
		}
	}()
	for {
		t.timer.counters.periodicRuns.Add(1)
		t.runTask()
		if !t.endRun() {
			ended = true
			return
		}
	}
}

// startRun starts the claimed run, if it is still claimed, no run is
// running and the timeout is not cancelled.
func (t *timeout) startRun() bool {
	for {
		w := t.word.Load()
		if w&claimedBit == 0 || w&runningBit != 0 || stateOf(w) == stateCancelled {
			return false
		}
		if t.word.CompareAndSwap(w, w&^claimedBit|runningBit) {
			return true
		}
	}
}

// endRun ends a run and reports whether the run owed meanwhile starts now.
func (t *timeout) endRun() bool {
	for {
		w := t.word.Load()
		if w&claimedBit != 0 && stateOf(w) != stateCancelled {
			if t.word.CompareAndSwap(w, w&^claimedBit) {
				return true
			}
			continue
		}
		if t.word.CompareAndSwap(w, w&^(claimedBit|runningBit)) {
			return false
		}
	}
}

// panicError is a recovered panic, as an error.
type panicError struct{ value any }

func (e panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }
