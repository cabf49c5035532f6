package pool

import (
	"fmt"

	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// Ants is an Executor backed by an ants goroutine pool of a fixed size, as
// a hashedwheel timer makes for itself: give it to a timer with
// WithExecutor, and Release it once the timer has stopped.
//
// It runs at most its size of tasks at once and keeps no queue: Execute
// waits while every goroutine runs a task, until one returns. A timer
// hands it at most Cap tasks at once, and the next only once one has
// returned, so it waits at most for that goroutine to go back idle. A pool
// shared by several timers, or used for other work beside a timer, can
// hold a timer's worker in Execute until a goroutine frees up.
//
// A task that panics, or calls runtime.Goexit, ends its own goroutine and
// no other; a panic is logged to slog.Default().
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

// Execute runs task on a pool goroutine, waiting while size tasks run. It
// returns an error for a nil task, and for every task once Release has
// been called.
func (a *Ants) Execute(task func()) error { return a.p.Execute(task) }

// Cap returns the number of pool goroutines: how many tasks run at once.
// A timer reads it to hand the executor no more tasks at once.
func (a *Ants) Cap() int { return a.p.Cap() }

// Release closes the executor: later Execute calls return an error. Tasks
// already running still run; Release does not wait for them. It is safe
// to call more than once.
func (a *Ants) Release() { a.p.Release() }
