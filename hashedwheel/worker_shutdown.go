package hashedwheel

import (
	"runtime"

	"github.com/wheeltimer/wheeltimer/mpsc"
)

// stopOutliver is a task whose timeout Stop does not return: a wheel
// context, whose deadline moves to a runtime timer, so that it still ends
// at its deadline.
type stopOutliver interface {
	outliveStop()
}

// shutdown ends the timer's work: it closes the intake stacks and the
// report queues, and cancels every timeout that neither expired nor was
// cancelled, leaving them for Stop to take. It runs on the worker
// goroutine, in the worker loop or in a Stop called by a task or hook
// running on it.
func (w *worker) shutdown() {
	h := w.timer
	w.dispatch()   // the claimed timeouts run, even now
	if w.stopped { // a task it ran inline called Stop, which shut down
		return
	}
	w.stopped = true
	result := make([]Timeout, 0, w.wheel.size)
	movedContexts := 0
	stop := func(t *timeout) bool {
		if !t.cancelForStop() {
			return false
		}
		if o, ok := t.task.(stopOutliver); ok {
			// A live context is not the caller's to have.
			o.outliveStop()
			movedContexts++
			return true
		}
		result = append(result, t)
		return true
	}
	stopQueued := func(t *timeout) {
		t.forgetBelow()
		if !stop(t) { // cancelled while queued
			w.cancellationDone(t)
		}
	}
	w.staged.drain(stopQueued)
	for i := range h.shards {
		batch := h.shards[i].close()
		h.countCancelled(batch.unlinked)
		for t := batch.pop(); t != nil; t = batch.pop() {
			stopQueued(t)
		}
	}
	// A timeout found cancelled in a bucket was cancelled by a Cancel,
	// whose report to the worker is queued or still to come: its
	// cancellation is completed here, its hook called on this goroutine
	// with the others, and the report dropped, whether it reached the
	// queue before it closed or found it closed. Once the wheel is clear,
	// no Cancel can succeed on a timeout that was in it.
	w.wheel.clear(func(t *timeout) {
		if !stop(t) {
			w.cancellationDone(t)
		}
	})
	for i := range h.shards {
		s := &h.shards[i]
		s.cancelled.Close()
		drain(s.cancelled, func(*timeout) {})
		s.moved.Close()
		drain(s.moved, func(*timeout) {})
	}
	h.counters.addProcessed(&h.counters.returnedByStop, uint64(len(result)))
	h.counters.contextFallbacks.Add(uint64(movedContexts))
	h.countCancelled(movedContexts)
	if h.maxPending > 0 {
		h.admitted.Add(-int64(len(result)))
	}
	h.startMu.Lock()
	h.stopResult = result
	h.startMu.Unlock()
	// The hooks last, once everything is accounted for: a hook that calls
	// runtime.Goexit ends the worker's goroutine, and the one that takes
	// over calls the rest.
	w.runCancelledHooks()
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

// exit lets Stop return, and the tasks' wait begin.
func (w *worker) exit() {
	h := w.timer
	w.dispatcher.Close()
	h.sleeper.Close()
	instances.Add(-1)
	close(h.done)
}
