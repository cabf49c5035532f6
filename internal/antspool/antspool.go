// Package antspool is the ants-backed executor: the pool a hashedwheel
// timer makes for itself, and the one pool.NewAnts wraps for users.
package antspool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/panjf2000/ants/v2"
)

// Pool runs functions on at most its size of goroutines, in the order
// Execute was called. Execute never blocks: while every goroutine runs a
// function, it queues the new one, and the first goroutine to finish runs
// it. So a function that hands the pool more work, a timer whose worker
// hands it due tasks, and several timers sharing it never wait for one
// another's goroutines.
type Pool struct {
	pool *ants.PoolWithFunc
	size int

	mu      sync.Mutex
	queue   []func() // waiting for a goroutine, oldest at queue[head]
	head    int
	running int // goroutines handed to ants that run functions
	closed  bool

	releaseOnce sync.Once
	drained     chan struct{} // closed once released and no goroutine runs a function
	released    chan struct{} // closed once every goroutine of the pool has exited
}

// New returns a pool of size goroutines, which must be at least 1.
func New(size int) (*Pool, error) {
	if size < 1 {
		return nil, fmt.Errorf("pool of %d goroutines: expected at least 1", size)
	}
	p := &Pool{size: size, drained: make(chan struct{}), released: make(chan struct{})}
	// A function converts to an interface without allocating: Invoke costs
	// no allocation, where Submit of a closure would.
	pool, err := ants.NewPoolWithFunc(size, p.run)
	if err != nil {
		return nil, err
	}
	p.pool = pool
	return p, nil
}

// ErrReleased is the error of Execute once Release was called.
var ErrReleased = errors.New("pool: executor released")

// Execute runs task on a goroutine of the pool, at once if one is free,
// else once every function queued before it has started. It never
// blocks. It fails with ErrReleased after Release, and for a nil task.
func (p *Pool) Execute(task func()) error {
	if task == nil {
		return errors.New("pool: nil task")
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrReleased
	}
	if p.running == p.size {
		p.queue = append(p.queue, task)
		p.mu.Unlock()
		return nil
	}
	p.running++
	p.mu.Unlock()
	// ants has a goroutine free, or one that has just finished its last
	// function and is going back idle, which it waits for.
	if err := p.pool.Invoke(task); err != nil {
		p.mu.Lock()
		p.goroutineDone()
		p.mu.Unlock()
		if errors.Is(err, ants.ErrPoolClosed) {
			return ErrReleased
		}
		return err
	}
	return nil
}

// run runs task, a func(), then the queued functions, oldest first, until
// none is left. A function that panics, logged to slog.Default() with its
// stack, or calls runtime.Goexit ends the goroutine: another carries on
// with the queue. So a function runs under no frame of the pool's but run's.
func (p *Pool) run(f any) {
	task := f.(func())
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			slog.Default().Error("pool: task panicked", "panic", r, "stack", string(debug.Stack()))
		}
		go p.carryOn()
	}()
	for ; task != nil; task = p.next() {
		task()
	}
	returned = true
}

// next returns the oldest queued function, or nil once none is queued,
// then counting the goroutine out.
func (p *Pool) next() func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head == len(p.queue) {
		if cap(p.queue) > maxKept {
			p.queue = nil
		}
		p.queue, p.head = p.queue[:0], 0
		p.goroutineDone()
		return nil
	}
	f := p.queue[p.head]
	p.queue[p.head] = nil
	p.head++
	return f
}

// maxKept bounds the capacity an empty queue keeps.
const maxKept = 1 << 10

// carryOn takes over the queue of a goroutine that a function ended by a
// panic or runtime.Goexit, on a new goroutine of ants: handed over from
// here, as ants counts the ending goroutine busy until it has returned.
func (p *Pool) carryOn() {
	if f := p.next(); f != nil && p.pool.Invoke(f) != nil {
		p.run(f) // ants refused: the function was accepted, so it runs here
	}
}

// goroutineDone counts a goroutine out; the last one out of a released
// pool lets its release go on. The caller holds mu.
func (p *Pool) goroutineDone() {
	p.running--
	if p.closed && p.running == 0 {
		close(p.drained)
	}
}

// Cap returns the pool's size.
func (p *Pool) Cap() int { return p.size }

// Release refuses new functions from now on; the queued and running ones
// still run, and then the pool's goroutines exit.
func (p *Pool) Release() { p.releaseOnce.Do(p.startRelease) }

// ReleaseContext releases the pool and waits until its goroutines have
// exited, or ctx is done.
func (p *Pool) ReleaseContext(ctx context.Context) error {
	p.Release()
	select {
	case <-p.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Pool) startRelease() {
	p.mu.Lock()
	p.closed = true
	if p.running == 0 {
		close(p.drained)
	}
	p.mu.Unlock()
	go func() {
		<-p.drained // ants's release does not wait for what is queued here
		_ = p.pool.ReleaseContext(context.Background())
		close(p.released)
	}()
}
