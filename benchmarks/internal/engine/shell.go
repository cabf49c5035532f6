package engine

import (
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// Shell is the public face of a timer built on the engine: the methods that
// hierarchical.Timer and minheap.Timer share. Each timer embeds the Shell
// that Start returns, through an unexported alias, so that these methods,
// and nothing else of the engine, are its public ones.
type Shell[L any] struct {
	engine *Engine[L]
}

// Start starts an engine for s, the structure of owner, configured by cfg,
// and returns the Shell for owner to embed.
func Start[L any](owner hashedwheel.Timer, s Structure[L], cfg Config) (Shell[L], error) {
	g, err := New[L](owner, s, cfg)
	if err != nil {
		return Shell[L]{}, err
	}
	return Shell[L]{engine: g}, nil
}

// NewTimeout schedules task to run once, after delay, on the timer's
// executor. A zero or negative delay runs it when the timer next looks for
// expired timeouts. It fails with hashedwheel.ErrNilTask or
// hashedwheel.ErrStopped, and then schedules nothing.
func (t *Shell[L]) NewTimeout(task hashedwheel.TimerTask, delay time.Duration) (hashedwheel.Timeout, error) {
	return t.engine.NewTimeout(task, delay)
}

// AfterFunc schedules f to run once, after delay, like time.AfterFunc. It
// fails as NewTimeout does, and with hashedwheel.ErrNilTask for a nil f.
func (t *Shell[L]) AfterFunc(delay time.Duration, f func()) (hashedwheel.Timeout, error) {
	if f == nil {
		return nil, hashedwheel.ErrNilTask
	}
	return t.engine.NewTimeout(FuncTask(f), delay)
}

// Stop stops the timer and returns the timeouts that had neither expired
// nor been cancelled, each now cancelled. It releases the timer's own
// executor and returns once every task already handed over has returned;
// called from a task, it waits for nothing. Later calls return nil.
func (t *Shell[L]) Stop() []hashedwheel.Timeout { return t.engine.Stop() }

// PendingTimeouts returns the number of timeouts neither expired nor
// cancelled; 0 after Stop.
func (t *Shell[L]) PendingTimeouts() int64 { return t.engine.Pending() }

// Inspect runs f with the lock of t's engine held, so that the timer that
// embeds t can read its structure safely. It is a function, not a method,
// so that it does not become one of the timer's public methods.
func Inspect[L any](t *Shell[L], f func()) { t.engine.Inspect(f) }
