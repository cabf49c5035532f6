package engine

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/pool"
)

// MaxWhen is the latest deadline an entry can have, in nanoseconds after the
// start (about 146 years): longer delays are clamped to it, so that
// structures can add a tick or two to a deadline without overflowing.
const MaxWhen = int64(1) << 62

// Structure is the data structure of a timer: it holds the pending entries
// and finds the expired ones. The engine calls every method with its lock
// held, from one goroutine at a time.
type Structure[L any] interface {
	// Insert links e, whose When is set. now is the current instant.
	Insert(e *Entry[L], now int64)
	// Remove unlinks e if it is linked; a cancelled entry may already have
	// been unlinked by Expire.
	Remove(e *Entry[L])
	// Move gives the linked, pending entry e the deadline when (setting
	// e.When) and puts it where that deadline belongs. now is the current
	// instant.
	Move(e *Entry[L], when, now int64)
	// Expire unlinks every entry whose time has come by now, appends those
	// it claimed (Entry.Claim) to due, and drops cancelled ones. It must
	// never return an entry whose When is after now.
	Expire(now int64, due []*Entry[L]) []*Entry[L]
	// Next returns the earliest instant at which Expire has work, or
	// math.MaxInt64 if none: the worker sleeps until then.
	Next() int64
	// Clear unlinks every entry and calls f for each.
	Clear(f func(*Entry[L]))
}

// Config is what the engine needs besides its structure.
type Config struct {
	// Executor runs expired tasks. Nil means a goroutine pool of 1024
	// goroutines owned by the engine and released when its worker exits,
	// as hashedwheel does.
	Executor pool.Executor
	// Logger receives task panics and executor failures; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Engine runs a Structure: producers insert, reset and cancel under one
// mutex, and one worker goroutine sleeps on one runtime timer until Next,
// expires, and hands the expired tasks to the dispatcher outside the lock.
type Engine[L any] struct {
	owner        hashedwheel.Timer
	start        time.Time
	executor     pool.Executor
	internalPool *antspool.Pool // the pool New made, released by exit; nil with Config.Executor
	logger       *slog.Logger
	dispatcher   *dispatch.Dispatcher[*Entry[L]]

	mu      sync.Mutex
	s       Structure[L]
	stopped bool
	pending int64
	wakeAt  int64 // the instant the worker sleeps until; guarded by mu

	wake     chan struct{} // capacity 1: an earlier Next than wakeAt
	stop     chan struct{} // closed by Stop
	done     chan struct{} // closed when the worker has exited
	workerID atomic.Uint64
	due      []*Entry[L]               // worker scratch: the empty list Expire fills next
	handed   []dispatch.Due[*Entry[L]] // worker scratch: due, as the dispatcher takes it
}

// New returns a running engine for structure s. owner is the public timer
// that wraps it, returned by each Timeout's Timer method.
func New[L any](owner hashedwheel.Timer, s Structure[L], cfg Config) (*Engine[L], error) {
	g := &Engine[L]{
		owner:    owner,
		start:    time.Now(),
		executor: cfg.Executor,
		logger:   cfg.Logger,
		s:        s,
		wakeAt:   math.MaxInt64,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if g.logger == nil {
		g.logger = slog.Default()
	}
	if g.executor == nil {
		exec, err := antspool.New(dispatch.DefaultParallelism)
		if err != nil {
			return nil, err
		}
		g.executor, g.internalPool = exec, exec
	}
	g.dispatcher = g.newDispatcher(g.executor)
	go g.run()
	return g, nil
}

// now returns the monotonic nanoseconds since the engine started.
func (g *Engine[L]) now() int64 { return int64(time.Since(g.start)) }

// NewTimeout schedules task to run once, after delay, on the executor. A
// zero or negative delay runs it on the structure's next expiry; a delay
// beyond MaxWhen is clamped. It fails with hashedwheel.ErrNilTask or
// hashedwheel.ErrStopped, and then schedules nothing.
func (g *Engine[L]) NewTimeout(task hashedwheel.TimerTask, delay time.Duration) (hashedwheel.Timeout, error) {
	if task == nil {
		return nil, hashedwheel.ErrNilTask
	}
	switch f := task.(type) {
	case hashedwheel.TaskFunc:
		if f == nil {
			return nil, hashedwheel.ErrNilTask
		}
	case FuncTask:
		if f == nil {
			return nil, hashedwheel.ErrNilTask
		}
	}
	e := &Entry[L]{engine: g, task: task}
	now := g.now()
	e.When = deadline(now, delay)
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return nil, hashedwheel.ErrStopped
	}
	g.s.Insert(e, now)
	g.pending++
	g.wakeIfEarlier()
	g.mu.Unlock()
	return e, nil
}

// reset completes Entry.Reset.
func (g *Engine[L]) reset(e *Entry[L], delay time.Duration) bool {
	now := g.now()
	when := deadline(now, delay)
	g.mu.Lock()
	// Under the lock the worker cannot claim e. A Cancel that wins the
	// state change after this check unlinks e from wherever Move put it.
	if g.stopped || e.state.Load() != statePending {
		g.mu.Unlock()
		return false
	}
	g.s.Move(e, when, now)
	g.wakeIfEarlier()
	g.mu.Unlock()
	return true
}

// wakeIfEarlier wakes the worker if the structure's next instant is earlier
// than the one it sleeps until. The caller holds the lock.
func (g *Engine[L]) wakeIfEarlier() {
	if next := g.s.Next(); next < g.wakeAt {
		g.wakeAt = next
		select {
		case g.wake <- struct{}{}:
		default: // a wake-up is already on its way
		}
	}
}

// deadline returns now+delay, clamped to [now, MaxWhen].
func deadline(now int64, delay time.Duration) int64 {
	switch {
	case delay <= 0:
		return now
	case int64(delay) > MaxWhen-now:
		return MaxWhen
	}
	return now + int64(delay)
}

// unlink completes a successful Cancel.
func (g *Engine[L]) unlink(e *Entry[L]) {
	g.mu.Lock()
	if !g.stopped { // Stop already unlinked everything
		g.s.Remove(e)
		g.pending--
	}
	g.mu.Unlock()
	g.cancelledHook(e)
}

// cancelledHook calls the task's Cancelled(Timeout) method, if it has one,
// recovering a panic.
func (g *Engine[L]) cancelledHook(e *Entry[L]) {
	hook, ok := e.task.(interface{ Cancelled(hashedwheel.Timeout) })
	if !ok {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			g.logger.Error("timer Cancelled hook panicked", "timeout", e, "panic", r)
		}
	}()
	hook.Cancelled(e)
}

// Pending returns the number of timeouts scheduled and neither expired nor
// cancelled. It is 0 after Stop.
func (g *Engine[L]) Pending() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pending
}

// Inspect runs f with the engine's lock held, so that tests and reports can
// read the structure safely.
func (g *Engine[L]) Inspect(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f()
}

// Stop stops the engine and returns the timeouts that had neither expired
// nor been cancelled, each now cancelled; their tasks never run and their
// Cancelled hooks are not called. It returns once the worker goroutine has
// exited and every task it handed over has returned, as hashedwheel's Stop
// does; called from a task, inline or on the executor, it waits for
// nothing, so that it cannot wait for itself. Later calls return nil, after
// the same wait.
func (g *Engine[L]) Stop() []hashedwheel.Timeout {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		g.waitStopped()
		return nil
	}
	g.stopped = true
	var result []hashedwheel.Timeout
	g.s.Clear(func(e *Entry[L]) {
		if e.cancelForStop() {
			result = append(result, e)
		}
	})
	g.pending = 0
	g.mu.Unlock()
	close(g.stop)
	g.waitStopped()
	return result
}

// waitStopped waits for the worker to exit and then for the dispatcher to
// be idle, unless the caller is the worker (running a task inline) or a
// task on the executor.
func (g *Engine[L]) waitStopped() {
	if goid.Current() == g.workerID.Load() || dispatch.InTask() {
		return
	}
	<-g.done
	<-g.dispatcher.Idle()
}
