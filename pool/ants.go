package pool

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

// DefaultSize is the number of pool goroutines NewAnts uses for size 0, and
// the size of the executor a hashedwheel timer creates when it is given none.
const DefaultSize = 1024

// Ants is an Executor backed by a fixed-size ants goroutine pool.
//
// Execute never blocks and never drops a task it accepted. While fewer than
// size tasks are running, a task starts at once on a pool goroutine. When
// the pool is saturated (size tasks running), Execute appends the task to an
// unbounded FIFO backlog and returns nil; one extra goroutine runs the
// backlog, in order, until it is empty. So at most size+1 goroutines run
// tasks, and saturation shows as lateness, never as loss or a blocked
// caller.
//
// A panicking task is recovered and logged; it does not kill the pool.
// After Release, Execute returns ErrClosed; tasks already accepted still
// run.
type Ants struct {
	pool   *ants.Pool
	logger *slog.Logger

	mu           sync.Mutex
	backlog      []func()
	draining     atomic.Bool // a goroutine is running the backlog; written under mu
	closed       bool
	backlogEnded chan struct{} // closed when the backlog goroutine exits; guarded by mu

	releaseOnce sync.Once
	shut        atomic.Bool   // Release was called: Execute refuses
	released    chan struct{} // closed once released, with nothing left running
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
// goroutines, plus one for the backlog. Size 0 means DefaultSize; a
// negative size is an error.
func NewAnts(size int, opts ...AntsOption) (*Ants, error) {
	if size < 0 {
		return nil, fmt.Errorf("pool: NewAnts(%d): expected size >= 0", size)
	}
	if size == 0 {
		size = DefaultSize
	}
	a := &Ants{logger: slog.Default()}
	for _, opt := range opts {
		if opt != nil {
			opt(a)
		}
	}
	p, err := ants.NewPool(size,
		ants.WithNonblocking(true),
		ants.WithPanicHandler(a.logPanic),
	)
	if err != nil {
		return nil, fmt.Errorf("pool: NewAnts(%d): %w", size, err)
	}
	a.pool = p
	return a, nil
}

// Execute runs task on a pool goroutine, or queues it in the backlog when
// the pool is saturated. It returns ErrClosed after Release and never
// blocks.
func (a *Ants) Execute(task func()) error {
	if task == nil {
		// ants treats a nil task as its workers' exit signal; refuse it.
		return errors.New("pool: nil task")
	}
	if a.shut.Load() {
		return ErrClosed
	}
	// While a backlog exists, new tasks queue behind it rather than
	// overtaking it.
	if !a.draining.Load() {
		err := a.pool.Submit(task)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ants.ErrPoolClosed):
			return ErrClosed
		case !errors.Is(err, ants.ErrPoolOverload):
			return err
		}
	}
	return a.enqueue(task)
}

func (a *Ants) enqueue(task func()) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	a.backlog = append(a.backlog, task)
	start := !a.draining.Load()
	a.draining.Store(true)
	if start {
		a.backlogEnded = make(chan struct{})
	}
	a.mu.Unlock()
	if start {
		go a.drainBacklog()
	}
	return nil
}

// drainBacklog runs backlog tasks in FIFO order until the backlog is empty.
func (a *Ants) drainBacklog() {
	for {
		a.mu.Lock()
		tasks := a.backlog
		a.backlog = nil
		if len(tasks) == 0 {
			a.draining.Store(false)
			close(a.backlogEnded)
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		for i, task := range tasks {
			tasks[i] = nil
			a.runRecovered(task)
		}
	}
}

// Cap returns the number of pool goroutines: how many tasks run at once
// before more wait in the backlog.
func (a *Ants) Cap() int { return a.pool.Cap() }

// Running returns the number of pool goroutines currently running a task.
func (a *Ants) Running() int { return a.pool.Running() }

// Backlog returns the number of accepted tasks waiting for a goroutine.
func (a *Ants) Backlog() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.backlog)
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
	a.shut.Store(true)
	a.mu.Lock()
	a.closed = true
	backlogEnded := a.backlogEnded // no backlog starts once closed
	a.mu.Unlock()
	a.released = make(chan struct{})
	go func() {
		_ = a.pool.ReleaseContext(context.Background())
		if backlogEnded != nil {
			<-backlogEnded
		}
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
