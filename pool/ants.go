package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/panjf2000/ants/v2"
)

// DefaultSize is the number of pool goroutines NewAnts uses for size 0, and
// the size of the executor a hashedwheel timer creates when it is given none.
const DefaultSize = 1024

// Ants is an Executor backed by an ants goroutine pool of a fixed size.
//
// Execute never blocks and never drops a task it accepted. While fewer than
// size tasks are running, a task starts at once on a pool goroutine. Once
// size tasks are running, Execute appends the task to a FIFO backlog and
// returns nil, and each pool goroutine that finishes a task takes the
// oldest task of the backlog before it goes idle. So at most size tasks run
// at once, a backlog waits only while size tasks are running, and no task
// waits behind another while a pool goroutine is idle.
//
// A panicking task is recovered and logged, and a task that calls
// runtime.Goexit ends only its own goroutine: in both cases the pool
// carries on with the backlog. After Release, Execute returns ErrClosed;
// tasks already accepted still run.
type Ants struct {
	pool   *ants.Pool
	size   int
	logger *slog.Logger

	mu      sync.Mutex
	running int      // tasks started and not yet returned, each on its own goroutine; at most size
	backlog []func() // accepted while size tasks ran, oldest at head
	head    int      // backlog[:head] have been taken and cleared
	closed  bool
	idle    chan struct{} // closed once closed and nothing runs or waits; guarded by mu

	releaseOnce sync.Once
	released    chan struct{} // closed once idle and the pool's goroutines have exited
}

// AntsOption configures an Ants executor made by NewAnts.
type AntsOption func(*Ants)

// WithLogger sets the logger to which a panicking task is reported, with
// its stack. Default slog.Default().
func WithLogger(l *slog.Logger) AntsOption {
	return func(a *Ants) {
		if l != nil {
			a.logger = l
		}
	}
}

// NewAnts returns an executor running tasks on at most size pool
// goroutines. Size 0 means DefaultSize; a negative size is an error.
func NewAnts(size int, opts ...AntsOption) (*Ants, error) {
	if size < 0 {
		return nil, fmt.Errorf("pool: NewAnts(%d): expected size >= 0", size)
	}
	if size == 0 {
		size = DefaultSize
	}
	a := &Ants{size: size, logger: slog.Default(), idle: make(chan struct{})}
	for _, opt := range opts {
		if opt != nil {
			opt(a)
		}
	}
	// Submit is called only with a place under size reserved, so it waits,
	// if at all, for a goroutine that has just finished a task to go idle.
	p, err := ants.NewPool(size, ants.WithPanicHandler(a.logPanic))
	if err != nil {
		return nil, fmt.Errorf("pool: NewAnts(%d): %w", size, err)
	}
	a.pool = p
	return a, nil
}

// Execute runs task on a pool goroutine, or queues it in the backlog while
// size tasks are running. It returns ErrClosed after Release and never
// blocks.
func (a *Ants) Execute(task func()) error {
	if task == nil {
		// ants treats a nil task as its workers' exit signal; refuse it.
		return errors.New("pool: nil task")
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	// While a backlog exists, new tasks queue behind it rather than
	// overtaking it.
	if a.running == a.size || a.head < len(a.backlog) {
		a.backlog = append(a.backlog, task)
		a.mu.Unlock()
		return nil
	}
	a.running++
	a.mu.Unlock()
	if err := a.pool.Submit(func() { a.runFrom(task) }); err != nil {
		// The pool was closed under us, which only Release does, after
		// closed was set: the task is refused, not lost.
		a.finished()
		return ErrClosed
	}
	return nil
}

// runFrom runs task, then backlog tasks, oldest first, until the backlog is
// empty, holding one of the size places all along.
func (a *Ants) runFrom(task func()) {
	returned := false
	defer func() {
		if !returned { // the task called runtime.Goexit: carry on elsewhere
			a.logger.Error("pool: task called runtime.Goexit", "stack", string(debug.Stack()))
			if next := a.next(); next != nil {
				go a.runFrom(next)
			}
		}
	}()
	for task != nil {
		a.runRecovered(task)
		task = a.next()
	}
	returned = true
}

// next takes the oldest backlog task, or, if there is none, gives up the
// caller's place and returns nil.
func (a *Ants) next() func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head == len(a.backlog) {
		a.release()
		return nil
	}
	task := a.backlog[a.head]
	a.backlog[a.head] = nil
	a.head++
	if a.head == len(a.backlog) {
		a.backlog, a.head = a.backlog[:0], 0
		if cap(a.backlog) > maxKeptBacklog {
			a.backlog = nil
		}
	}
	return task
}

// maxKeptBacklog bounds the capacity an empty backlog keeps, so that a
// burst's worth of pointers is not held once it has run.
const maxKeptBacklog = 1 << 10

// finished gives up a place taken for a task that did not start.
func (a *Ants) finished() {
	a.mu.Lock()
	a.release()
	a.mu.Unlock()
}

// release gives up a place. The caller holds mu.
func (a *Ants) release() {
	a.running--
	if a.closed && a.running == 0 {
		close(a.idle)
	}
}

// Cap returns the number of pool goroutines: how many tasks run at once
// before more wait in the backlog.
func (a *Ants) Cap() int { return a.size }

// Running returns the number of tasks running.
func (a *Ants) Running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

// Backlog returns the number of accepted tasks waiting for a goroutine.
func (a *Ants) Backlog() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.backlog) - a.head
}

// Release closes the executor: later Execute calls return ErrClosed. Tasks
// already accepted, running or in the backlog, still run; Release does not
// wait for them. It is safe to call more than once.
func (a *Ants) Release() {
	a.releaseOnce.Do(a.startRelease)
}

// ReleaseContext closes the executor as Release does, then waits until
// every task it accepted has returned and every goroutine it started has
// exited, or until ctx is done, whose error it then returns. Once it has
// returned nil, nothing of the executor runs.
func (a *Ants) ReleaseContext(ctx context.Context) error {
	a.releaseOnce.Do(a.startRelease)
	select {
	case <-a.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startRelease closes the executor and starts the goroutine that waits for
// its tasks and goroutines, then closes released.
func (a *Ants) startRelease() {
	a.mu.Lock()
	a.closed = true
	if a.running == 0 {
		close(a.idle)
	}
	a.mu.Unlock()
	a.released = make(chan struct{})
	go func() {
		<-a.idle
		_ = a.pool.ReleaseContext(context.Background())
		close(a.released)
	}()
}

func (a *Ants) runRecovered(task func()) {
	defer func() {
		if r := recover(); r != nil {
			a.logPanic(r)
		}
	}()
	task()
}

// logPanic reports a task's panic, with the stack of the goroutine that
// recovered it.
func (a *Ants) logPanic(r any) {
	a.logger.Error("pool: task panicked", "panic", r, "stack", string(debug.Stack()))
}
