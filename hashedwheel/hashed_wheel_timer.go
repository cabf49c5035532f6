package hashedwheel

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/wheeltimer/wheeltimer/internal/clock"
	"github.com/wheeltimer/wheeltimer/internal/goid"
	"github.com/wheeltimer/wheeltimer/pool"
)

// The states of a HashedWheelTimer, as Netty's WORKER_STATE_*.
const (
	timerInit int32 = iota
	timerStarted
	timerStopped
)

// HashedWheelTimer is a Timer backed by a hashed wheel and one worker
// goroutine. Make one with New; its methods are safe for concurrent use.
//
// A timer is meant to be shared: each holds a goroutine and, by default, a
// goroutine pool, so an application needs few of them. Call Stop when done.
type HashedWheelTimer struct {
	// Read by every NewTimeout; written only at start and stop, or, for
	// idle, when the worker falls asleep with nothing to do.
	state      atomic.Int32
	idle       atomic.Bool  // the worker sleeps until woken: producers must wake it
	wokenAt    atomic.Int64 // when the timeout that woke the worker was made
	clock      clock.Clock
	startNanos int64     // clock reading at start
	startTime  time.Time // the same instant, for Deadline
	shards     []shard
	shardMask  uint32
	maxPending int64
	sleeper    clock.Sleeper

	_ cpu.CacheLinePad

	admitted atomic.Int64 // pending timeouts; kept only with a limit
	counters counters

	startMu      sync.Mutex
	config       config
	executor     pool.Executor
	ownsExecutor bool
	worker       *worker
	workerID     atomic.Uint64 // goroutine id of the worker
	done         chan struct{} // closed when the worker has exited
	stopResult   []Timeout     // written by the worker before done closes
}

var _ Timer = (*HashedWheelTimer)(nil)

// New returns a timer configured by opts, not yet started. It fails, with
// an error wrapping ErrInvalidOption that names the option and the value,
// if an option is invalid.
func New(opts ...Option) (*HashedWheelTimer, error) {
	cfg := defaultConfig()
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	shards := newShards()
	h := &HashedWheelTimer{
		clock:      cfg.clock,
		shards:     shards,
		shardMask:  uint32(len(shards) - 1),
		maxPending: cfg.maxPending,
		config:     cfg,
		executor:   cfg.executor,
		done:       make(chan struct{}),
	}
	return h, nil
}

// Start starts the worker goroutine. Calling it is optional: the first
// NewTimeout starts the timer. It returns nil if the timer is running and
// ErrStopped once Stop has been called.
func (h *HashedWheelTimer) Start() error {
	if h.state.Load() == timerStarted {
		return nil
	}
	h.startMu.Lock()
	defer h.startMu.Unlock()
	switch h.state.Load() {
	case timerStarted:
		return nil
	case timerStopped:
		return ErrStopped
	}
	if h.executor == nil {
		exec, err := pool.NewAnts(pool.DefaultSize)
		if err != nil {
			return err
		}
		h.executor, h.ownsExecutor = exec, true
	}
	h.sleeper = h.clock.NewSleeper()
	h.startNanos = h.clock.Now()
	h.startTime = time.Now()
	h.worker = newWorker(h)
	countInstance(h.config.logger)
	go h.worker.run()
	h.state.Store(timerStarted)
	return nil
}

// NewTimeout schedules task to run once, after delay, on the timer's
// executor, and starts the timer if needed. A zero or negative delay runs
// it on the next tick; a delay too large to represent is clamped.
//
// It fails with ErrNilTask for a nil task, ErrStopped after Stop and
// ErrTooManyPendingTimeouts at the limit set by WithMaxPendingTimeouts; a
// failed call schedules nothing. NewTimeout never blocks and may be called
// from any goroutine, including from a running task. About once in every
// few thousand calls it yields the processor, as runtime.Gosched does, so
// that the timer's worker keeps up with producers on every core.
func (h *HashedWheelTimer) NewTimeout(task TimerTask, delay time.Duration) (Timeout, error) {
	if task == nil {
		return nil, ErrNilTask
	}
	if f, ok := task.(TaskFunc); ok && f == nil {
		return nil, ErrNilTask
	}
	if h.state.Load() != timerStarted {
		if err := h.Start(); err != nil {
			h.counters.rejectedStopped.Add(1)
			return nil, err
		}
	}
	if h.maxPending > 0 && !h.admit() {
		h.counters.rejectedFull.Add(1)
		return nil, tooManyPending(h.maxPending)
	}
	now := h.clock.Now() - h.startNanos
	t := &timeout{timer: h, task: task, deadline: deadline(now, delay)}
	count, ok := h.shardOf(t).push(t)
	if !ok {
		// Stop closed the intake first: the timeout was never accepted.
		if h.maxPending > 0 {
			h.admitted.Add(-1)
		}
		h.counters.rejectedStopped.Add(1)
		return nil, ErrStopped
	}
	if h.idle.Load() {
		h.wakeWorker(now)
	} else {
		h.queued(uint64(count))
	}
	return t, nil
}

// AfterFunc schedules f to run once, after delay, like time.AfterFunc, and
// returns its Timeout. It fails as NewTimeout does, and with ErrNilTask for
// a nil f.
func (h *HashedWheelTimer) AfterFunc(delay time.Duration, f func()) (Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	return h.NewTimeout(funcTask(f), delay)
}

// funcTask is the TimerTask of AfterFunc. A func converts to an interface
// without allocating.
type funcTask func()

func (f funcTask) Run(Timeout) { f() }

// deadline returns the deadline of a timeout made at now with delay, in
// nanoseconds after the start, clamped instead of overflowing.
func deadline(now int64, delay time.Duration) int64 {
	d := now + int64(delay)
	if delay > 0 && d < 0 {
		return math.MaxInt64
	}
	return d
}

// admit takes one place under the pending limit, or fails at the limit.
func (h *HashedWheelTimer) admit() bool {
	for {
		n := h.admitted.Load()
		if n >= h.maxPending {
			return false
		}
		if h.admitted.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// wakeWorker wakes the worker from idleness, once, telling it when the
// timeout that woke it was made (now, in nanoseconds after the start).
func (h *HashedWheelTimer) wakeWorker(now int64) {
	if h.idle.CompareAndSwap(true, false) {
		h.wokenAt.Store(now)
		h.sleeper.Wake()
	}
}

// Stop stops the timer and returns the timeouts that had neither expired
// nor been cancelled, each now cancelled; their tasks never run and their
// Cancelled hooks are not called. Every timeout NewTimeout accepted has
// either expired, been cancelled, or is in this result.
//
// Stop waits for the worker goroutine to exit, but not for tasks already
// handed to the executor. It releases the timer's own executor, not one
// given by WithExecutor. Only the first call returns timeouts; later calls,
// and a Stop before the timer started, return nil. Stop may be called from
// a task, including one running inline on the worker goroutine.
func (h *HashedWheelTimer) Stop() []Timeout {
	h.startMu.Lock()
	prev := h.state.Swap(timerStopped)
	if prev == timerInit {
		close(h.done)
	}
	h.startMu.Unlock()

	onWorker := prev != timerInit && goid.Current() == h.workerID.Load()
	switch {
	case prev == timerStarted && onWorker:
		return h.worker.shutdown()
	case prev == timerStarted:
		h.sleeper.Wake()
		<-h.done
		return h.stopResult
	case !onWorker:
		<-h.done // an earlier Stop may still be shutting the worker down
	}
	return nil
}

// PendingTimeouts returns the number of timeouts that are scheduled and
// have neither expired nor had their cancellation processed. It is 0 after
// Stop.
func (h *HashedWheelTimer) PendingTimeouts() int64 {
	processed := h.counters.processed()
	return h.pending(processed, h.scheduled())
}

// instances counts running timers, to warn once when an application makes
// too many of them (as Netty does above 64).
var (
	instances     atomic.Int64
	warnInstances sync.Once
)

const instanceWarnLimit = 64

func countInstance(logger *slog.Logger) {
	if instances.Add(1) > instanceWarnLimit {
		warnInstances.Do(func() {
			logger.Error("hashedwheel: more than 64 timers are running; a timer is meant to be shared, not made per use",
				"running", instances.Load())
		})
	}
}
