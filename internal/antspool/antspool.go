// Package antspool is the ants-backed executor: the pool a hashedwheel
// timer makes for itself, and the one pool.NewAnts wraps for users. It has
// no queue of its own: the timer's dispatcher never hands it more
// functions at once than its size, and decides which task starts when.
package antspool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/ants/v2"
)

// Pool runs functions on at most its size of goroutines, in ants's
// blocking mode: Execute waits while every goroutine runs a function, for
// the first to go idle. A caller that hands it no more functions than its
// size, and each only once the one before it on a goroutine has returned,
// waits at most for that goroutine to go back idle.
type Pool struct {
	pool *ants.Pool
	size int

	closed      atomic.Bool // Release was called: Execute refuses
	releaseOnce sync.Once
	released    chan struct{} // closed once every goroutine of the pool has exited
}

// New returns a pool of size goroutines, which must be at least 1.
func New(size int) (*Pool, error) {
	if size < 1 {
		return nil, fmt.Errorf("pool of %d goroutines: expected at least 1", size)
	}
	p, err := ants.NewPool(size, ants.WithPanicHandler(logPanic))
	if err != nil {
		return nil, err
	}
	return &Pool{pool: p, size: size, released: make(chan struct{})}, nil
}

// ErrReleased is the error of Execute on a released pool.
var ErrReleased = errors.New("pool: executor released")

// Execute runs task on a pool goroutine, waiting while every goroutine
// runs a function. It refuses a nil task, and every task once Release has
// been called, with ErrReleased.
func (p *Pool) Execute(task func()) error {
	if task == nil {
		// ants takes a nil function for its goroutines' exit signal.
		return errors.New("pool: nil task")
	}
	if p.closed.Load() {
		return ErrReleased
	}
	if err := p.pool.Submit(task); err != nil {
		if errors.Is(err, ants.ErrPoolClosed) {
			return ErrReleased
		}
		return err
	}
	return nil
}

// Cap returns the number of goroutines: how many functions run at once.
func (p *Pool) Cap() int { return p.size }

// Release closes the pool: later Execute calls, and those waiting for a
// goroutine, return ErrReleased. Functions already running still run to
// the end; Release does not wait for them. It is safe to call more than
// once.
func (p *Pool) Release() { p.releaseOnce.Do(p.startRelease) }

// ReleaseContext closes the pool as Release does, then waits until every
// goroutine it started has exited, or until ctx is done, whose error it
// then returns. Once it has returned nil, nothing of the pool runs.
func (p *Pool) ReleaseContext(ctx context.Context) error {
	p.releaseOnce.Do(p.startRelease)
	select {
	case <-p.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startRelease refuses later Execute calls at once and starts the
// goroutine that closes the ants pool, waits for its goroutines to exit,
// then closes released. ants waits only in the call that closes the pool,
// so one goroutine makes that call for every caller.
func (p *Pool) startRelease() {
	p.closed.Store(true)
	go func() {
		_ = p.pool.ReleaseContext(context.Background())
		close(p.released)
	}()
}

// logPanic reports a panic that a function handed to the pool did not
// recover itself, with the stack of the goroutine it ended. The timer's
// tasks never get here: the timer recovers and logs them itself.
func logPanic(r any) {
	slog.Default().Error("pool: task panicked", "panic", r, "stack", string(debug.Stack()))
}
