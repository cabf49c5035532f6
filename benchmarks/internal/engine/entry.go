package engine

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// The states of an entry. Each transition is one compare-and-swap, so
// exactly one of the worker, Cancel and Stop decides each entry's fate.
//
//	pending ──worker claims it──▶ expired
//	   └──────Cancel or Stop────▶ cancelled
const (
	statePending int32 = iota
	stateCancelled
	stateExpired
)

// Entry is one scheduled task: the hashedwheel.Timeout handed to the caller
// and the node the Structure links. L is the structure's per-entry
// bookkeeping.
type Entry[L any] struct {
	engine *Engine[L]
	task   hashedwheel.TimerTask
	// When is the instant the task may run, in nanoseconds after the
	// engine's start. It is set before Insert and changed only by Move,
	// both under the engine's lock.
	When int64
	// Link is the structure's bookkeeping. Only the structure touches it,
	// always under the engine's lock.
	Link  L
	state atomic.Int32
}

var _ hashedwheel.Timeout = (*Entry[struct{}])(nil)

// Timer returns the timer that created the timeout.
func (e *Entry[L]) Timer() hashedwheel.Timer { return e.engine.owner }

// Task returns the scheduled task.
func (e *Entry[L]) Task() hashedwheel.TimerTask { return e.task }

// Deadline returns the earliest instant the task may run; it never runs
// before it. It takes the engine's lock, since Reset may move it.
func (e *Entry[L]) Deadline() time.Time {
	g := e.engine
	g.mu.Lock()
	when := e.When
	g.mu.Unlock()
	return g.start.Add(time.Duration(when))
}

// IsExpired reports whether the timer claimed the timeout for running.
func (e *Entry[L]) IsExpired() bool { return e.state.Load() == stateExpired }

// IsCancelled reports whether the timeout was cancelled, by Cancel or Stop.
func (e *Entry[L]) IsCancelled() bool { return e.state.Load() == stateCancelled }

// Cancel prevents the task from running. It returns true for the one call
// that cancelled the timeout, false if it had already expired or been
// cancelled. The entry is unlinked before Cancel returns (O(1) or O(log n),
// as the structure allows), and then the task's Cancelled hook, if any,
// runs on the calling goroutine.
func (e *Entry[L]) Cancel() bool {
	if !e.state.CompareAndSwap(statePending, stateCancelled) {
		return false
	}
	e.engine.unlink(e)
	return true
}

// Reset moves the deadline of a timeout that has neither expired nor been
// cancelled to now+delay, clamped as NewTimeout clamps it, and returns
// true; the worker is woken if the new deadline is the earliest. Otherwise,
// or once the timer has stopped, it changes nothing and returns false, and
// the caller schedules anew.
func (e *Entry[L]) Reset(delay time.Duration) bool { return e.engine.reset(e, delay) }

// Claim marks a pending entry expired, so that its task may run. It fails
// if the entry was cancelled. Structures call it from Expire.
func (e *Entry[L]) Claim() bool {
	return e.state.CompareAndSwap(statePending, stateExpired)
}

// cancelForStop cancels the entry on behalf of Stop; it fails if the entry
// already expired or was cancelled.
func (e *Entry[L]) cancelForStop() bool {
	return e.state.CompareAndSwap(statePending, stateCancelled)
}

// run runs the task, recovering and logging a panic so that one bad task
// cannot take down the goroutine that drains a dispatch.
func (e *Entry[L]) run() {
	defer func() {
		if r := recover(); r != nil {
			e.engine.logger.Error("timer task panicked", "timeout", e, "panic", r)
		}
	}()
	e.task.Run(e)
}

func (e *Entry[L]) String() string {
	state := "pending"
	switch e.state.Load() {
	case stateCancelled:
		state = "cancelled"
	case stateExpired:
		state = "expired"
	}
	return fmt.Sprintf("Timeout(deadline: %s, %s)", e.Deadline().Format(time.RFC3339Nano), state)
}

// FuncTask adapts a func() to hashedwheel.TimerTask, for AfterFunc. A func
// converts to an interface without allocating.
type FuncTask func()

// Run calls f.
func (f FuncTask) Run(hashedwheel.Timeout) { f() }
