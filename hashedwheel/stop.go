package hashedwheel

import (
	"context"
	"runtime"

	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/mpsc"
)

// Stop stops the timer and returns the timeouts that had neither expired
// nor been cancelled, each now cancelled, its hook not called: every
// accepted timeout has expired, been cancelled, or is in the result of the
// first Stop to return; later calls return nil. Live contexts and channel
// timers are not returned: timers of the clock's own keep them.
//
// Called from outside every timer's tasks, Stop returns once every claimed
// task has returned and the timer's own pool has released its goroutines:
// nothing of the timer runs after (StopContext bounds the wait). Called
// from a task of any timer, or a hook or Scheduler of this one, Stop does
// not wait for tasks, so it never deadlocks. It never waits for a free
// goroutine of the executor, and releases only the timer's own pool.
func (h *HashedWheelTimer) Stop() []Timeout {
	timeouts, _ := h.StopContext(context.Background())
	return timeouts
}

// StopContext is Stop bounded by ctx. Once ctx is done it returns
// ctx.Err(), with the timeouts if the worker had stopped, else with none,
// and the next Stop returns them; claimed tasks still run.
func (h *HashedWheelTimer) StopContext(ctx context.Context) ([]Timeout, error) {
	h.startMu.Lock()
	h.initZero()
	prev := h.state.Swap(timerStopped)
	if prev == timerInit {
		close(h.done)
	}
	h.startMu.Unlock()
	if prev == timerInit || h.worker == nil {
		<-h.done
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
	if !waitOrDone(ctx, h.done) {
		return nil, ctx.Err()
	}
	result := h.takeStopResult()
	if dispatch.InTask() { // it may be one of those waited for
		return result, nil
	}
	if !waitOrDone(ctx, h.released) {
		return result, ctx.Err()
	}
	return result, nil
}

// waitOrDone waits for c to close or ctx to be done, and reports whether c
// has closed, so that a done ctx still sees what has happened.
func waitOrDone(ctx context.Context, c <-chan struct{}) bool {
	select {
	case <-c:
	case <-ctx.Done():
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// takeStopResult returns the shutdown's timeouts to the first caller.
func (h *HashedWheelTimer) takeStopResult() []Timeout {
	h.startMu.Lock()
	defer h.startMu.Unlock()
	result := h.stopResult
	h.stopResult = nil
	return result
}

// releaseWhenIdle starts, once, the goroutine that waits for the worker
// and every task, then releases the timer's own pool and closes released.
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

// stopOutliver is a task whose timeout Stop moves to a clock's own timer;
// it counts its fallback.
type stopOutliver interface {
	outliveStop(t *timeout)
}

// shutdown, on the worker goroutine, closes the intake and the report
// queues and cancels every pending timeout, leaving them for Stop.
func (w *worker) shutdown() {
	h := w.timer
	w.dispatchExpired(false) // the claimed timeouts run, even now
	if w.stopped {           // a task it ran inline called Stop, which shut down
		return
	}
	w.stopped = true
	result := make([]Timeout, 0, w.wheel.size)
	moved := 0
	// A timeout found cancelled has its report queued or to come: its
	// cancellation completes here, and the report is dropped.
	stop := func(t *timeout) {
		switch o, ok := t.task.(stopOutliver); {
		case !t.cancelForStop():
			if cancelledHookOf(t.task) != nil {
				w.hooked = append(w.hooked, t)
			}
		case ok:
			o.outliveStop(t)
			moved++
		default:
			result = append(result, t)
		}
	}
	head := w.staged // the staged first, then the stacks
	w.staged, w.stagedTail = nil, nil
	for i := 0; ; i++ {
		for t := head; t != nil; {
			next := t.next
			t.next = nil
			t.forgetBelow()
			stop(t)
			t = next
		}
		if i == len(h.shards) {
			break
		}
		head, _, _ = h.shards[i].take(true) // closing: every later push fails
	}
	w.wheel.clear(stop)
	if verifyEachStep {
		w.checkWheel("shutdown")
	}
	for i := range h.shards {
		discardReports(h.shards[i].reports)
	}
	// Counted before their places are freed, as by Cancel.
	h.counters.returnedByStop.Add(uint64(len(result)))
	h.counters.cancelled.add(uint64(moved))
	h.unadmit(int64(len(result) + moved))
	h.startMu.Lock()
	h.stopResult = result
	h.startMu.Unlock()
	// Hooks last: one that calls runtime.Goexit ends this goroutine; its
	// successor calls the rest.
	w.runCancelledHooks()
}

// discardReports closes q and drains it, waiting for pushes begun before.
func discardReports(q *mpsc.Queue[timeout]) {
	q.Close()
	for !q.Empty() {
		if _, ok := q.Pop(); !ok {
			runtime.Gosched()
		}
	}
}

func (w *worker) exit() {
	h := w.timer
	w.dispatcher.Close()
	h.sleeper.Close()
	instances.Add(-1)
	close(h.done)
}
