package pool

import (
	"fmt"

	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// Ants is an Executor backed by an ants goroutine pool of a fixed size, as
// a hashedwheel timer makes for itself: give it to one or several timers
// with WithExecutor, use it for other work beside them, and Release it
// once the timers have stopped.
//
// It runs at most its size of tasks at once, in the order Execute was
// called, and Execute never blocks: while every goroutine runs a task,
// the new one waits in the pool's queue for the first to finish. So a
// timer's worker never waits for a goroutine held by another timer's
// task, and a task that hands the pool follow-up work never waits for the
// goroutine it holds itself.
//
// A task that panics, logged to slog.Default(), or calls runtime.Goexit
// ends its own goroutine, and another takes the queue over: the pool's
// size holds.
type Ants struct {
	p *antspool.Pool
}

// NewAnts returns an executor running tasks on at most size goroutines.
// Size 0 means 1024, the size of the pool a timer makes for itself; a
// negative size is an error.
func NewAnts(size int) (*Ants, error) {
	if size < 0 {
		return nil, fmt.Errorf("pool: NewAnts(%d): expected size >= 0", size)
	}
	if size == 0 {
		size = dispatch.DefaultParallelism
	}
	p, err := antspool.New(size)
	if err != nil {
		return nil, fmt.Errorf("pool: NewAnts(%d): %w", size, err)
	}
	return &Ants{p: p}, nil
}

// Execute runs task on a pool goroutine: at once if one is free, else once
// the tasks queued before it have started. It never blocks. It returns an
// error for a nil task, and for every task once Release has been called.
func (a *Ants) Execute(task func()) error { return a.p.Execute(task) }

// Cap returns the number of pool goroutines: how many tasks run at once.
// A timer reads it to hand the executor no more tasks at once.
func (a *Ants) Cap() int { return a.p.Cap() }

// Release closes the executor: later Execute calls return an error. Tasks
// already running or queued still run; Release does not wait for them. It
// is safe to call more than once.
func (a *Ants) Release() { a.p.Release() }
