package hashedwheel

import (
	"context"
	"runtime"

	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/mpsc"
)

// Stop stops the timer and returns the timeouts that had neither expired
// nor been cancelled, each now cancelled: their tasks never run and their
// Cancelled hooks are not called. Every timeout NewTimeout accepted has
// either expired, been cancelled, or is in this result. The timeouts are
// returned once: by the first Stop or StopContext that returns after the
// worker has stopped. Later calls, and a Stop before the timer started,
// return nil.
//
// Called from outside every timer's tasks, Stop returns only once every
// task the timer has claimed has returned (each timeout that IsExpired,
// and any periodic run in progress), whichever executor runs them, and
// once the timer's own pool, if it made one, has released its goroutines:
// after Stop returns, nothing of the timer runs or will start. If a task
// never returns, neither does Stop; StopContext bounds the wait. Neither
// Stop nor the timer's worker ever waits for a goroutine of the executor
// to free up.
//
// Called from a task, of this timer or of any other, or from a Cancelled
// hook or Scheduler of this timer, Stop does not wait for tasks: a task
// cannot wait for itself, nor safely for tasks that may wait for it. So it
// never deadlocks, even when several tasks call it at once. It cannot tell
// that a goroutine calling it is waited for by a task (a task that starts
// a goroutine calling Stop and waits for it): such a Stop waits for that
// task, which waits for it.
//
// The timeouts of contexts made by WithDeadline and still live are not
// returned: each context's deadline moves to a runtime timer, and its Done
// still closes at its deadline.
//
// Stop releases the timer's own executor, not one given by WithExecutor.
func (h *HashedWheelTimer) Stop() []Timeout {
	timeouts, _ := h.StopContext(context.Background())
	return timeouts
}

// StopContext is Stop with a bound on its waits: for the worker to stop,
// which a task running on it (pool.Inline), an executor blocking in
// Execute or a Cancelled hook that blocks can delay, and for the tasks to
// return. Once ctx is done it returns ctx.Err(): with the timeouts if the
// worker had stopped, and otherwise with none, the worker then stopping
// and cancelling them once what holds it returns, and the next Stop
// returning them. Either way the tasks that were claimed still run.
func (h *HashedWheelTimer) StopContext(ctx context.Context) ([]Timeout, error) {
	h.startMu.Lock()
	h.initZero()
	prev := h.state.Swap(timerStopped)
	if prev == timerInit {
		close(h.done)
	}
	h.startMu.Unlock()
	if prev == timerInit || h.worker == nil {
		<-h.done // an earlier Stop of a timer never started
		return nil, nil
	}

	if goid.Current() == h.workerID.Load() {
		// A task running inline, or a hook, on the worker: shut down here.
		if prev == timerStarted {
			h.worker.shutdown()
		}
		h.releaseWhenIdle()
		return h.takeStopResult(), nil
	}
	if prev == timerStarted {
		h.sleeper.Wake()
	}
	h.releaseWhenIdle()
	// Each wait looks at what it waits for before the context, so that a
	// done context returns what has already happened, not a coin toss of
	// select.
	if !waitOrDone(ctx, h.done) {
		return nil, ctx.Err()
	}
	result := h.takeStopResult()
	if dispatch.InTask() { // a task, of this timer or another: it may be one of those waited for
		return result, nil
	}
	if !waitOrDone(ctx, h.released) {
		return result, ctx.Err()
	}
	return result, nil
}

// waitOrDone waits for c to close and reports whether it did: false once
// ctx is done, if c has not closed by then.
func waitOrDone(ctx context.Context, c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
	}
	select {
	case <-c:
		return true
	case <-ctx.Done():
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
}

// takeStopResult returns, to the first caller once the worker has stopped,
// the timeouts its shutdown cancelled, and nil to the others: the timer
// keeps nothing once they are handed out.
func (h *HashedWheelTimer) takeStopResult() []Timeout {
	h.startMu.Lock()
	defer h.startMu.Unlock()
	result := h.stopResult
	h.stopResult = nil
	return result
}

// releaseWhenIdle starts, once, the goroutine that waits for the worker to
// exit and every dispatched task to return, then releases the timer's own
// pool, waits for its goroutines, and closes h.released.
func (h *HashedWheelTimer) releaseWhenIdle() {
	h.releaseOnce.Do(func() {
		go func() {
			<-h.done
			<-h.worker.dispatcher.Idle()
			if h.internalPool != nil {
				_ = h.internalPool.ReleaseContext(context.Background())
			}
			close(h.released)
		}()
	})
}

// stopOutliver is a task whose timeout Stop does not return, but moves to
// a timer of the clock's own (Clock.AfterFunc): a wheel
// context's, which still ends at its deadline, and a channel timer's,
// which still sends. It counts its own fallback.
type stopOutliver interface {
	outliveStop(t *timeout)
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
	moved := 0
	stop := func(t *timeout) bool {
		if !t.cancelForStop() {
			return false
		}
		if o, ok := t.task.(stopOutliver); ok {
			// A live context is not the caller's to have.
			o.outliveStop(t)
			moved++
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
	w.staged.takeAll(stopQueued)
	for i := range h.shards {
		head, _ := h.shards[i].take(true) // closing: every later push fails
		for t := head; t != nil; {
			next := t.next
			t.next = nil
			stopQueued(t)
			t = next
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
	if verifyEachStep {
		w.checkWheel("shutdown") // the whole wheel, now empty: a check of every bucket
	}
	for i := range h.shards {
		discardReports(h.shards[i].cancelled)
		discardReports(h.shards[i].moved)
	}
	h.counters.returnedByStop.Add(uint64(len(result)))
	h.countCancelled(moved)
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

// discardReports closes q and pops every report on it, waiting for the
// pushes that had claimed their place before it closed.
func discardReports(q *mpsc.Queue[timeout]) {
	q.Close()
	for !q.Empty() {
		if _, ok := q.Pop(); !ok {
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
