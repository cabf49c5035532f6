package pool

import (
	"errors"
	"fmt"
	"log/slog"
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
	pool *ants.Pool

	mu       sync.Mutex
	backlog  []func()
	draining atomic.Bool // a goroutine is running the backlog; written under mu
	closed   bool
}

// NewAnts returns an executor running tasks on at most size pool
// goroutines, plus one for the backlog. Size 0 means DefaultSize; a
// negative size is an error.
func NewAnts(size int) (*Ants, error) {
	if size < 0 {
		return nil, fmt.Errorf("pool: NewAnts(%d): expected size >= 0", size)
	}
	if size == 0 {
		size = DefaultSize
	}
	p, err := ants.NewPool(size,
		ants.WithNonblocking(true),
		ants.WithPanicHandler(logPanic),
	)
	if err != nil {
		return nil, fmt.Errorf("pool: NewAnts(%d): %w", size, err)
	}
	return &Ants{pool: p}, nil
}

// Execute runs task on a pool goroutine, or queues it in the backlog when
// the pool is saturated. It returns ErrClosed after Release and never
// blocks.
func (a *Ants) Execute(task func()) error {
	if task == nil {
		// ants treats a nil task as its workers' exit signal; refuse it.
		return errors.New("pool: nil task")
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
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		for i, task := range tasks {
			tasks[i] = nil
			runRecovered(task)
		}
	}
}

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
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.pool.Release()
}

func runRecovered(task func()) {
	defer func() {
		if r := recover(); r != nil {
			logPanic(r)
		}
	}()
	task()
}

func logPanic(r any) {
	slog.Error("pool: task panicked", "panic", r)
}
