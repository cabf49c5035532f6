package hashedwheel

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
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
// The zero value is a timer with the default options. A timer, holding a
// goroutine and a pool, is meant to be shared. Call Stop when done.
type HashedWheelTimer struct {
	// Read by every NewTimeout; written only at start and stop, or, for
	// idle, when the worker sleeps past its next tick and must be woken.
	state      atomic.Int32
	idle       atomic.Bool
	clock      clock.Clock
	startNanos int64
	tickNanos  int64
	shards     []shard
	shardMask  uint32
	spread     atomic.Bool // new timeouts go by processor (pushTimeout)
	maxPending int64
	sleeper    clockwork.Sleeper
	watcher    clockwork.Watcher // the sleeper, on a clock.Fake; else nil

	_ cpu.CacheLinePad

	admitted atomic.Int64 // pending timeouts; kept only with a limit
	counters counters

	startMu      sync.Mutex
	config       config
	executor     pool.Executor
	internalPool *antspool.Pool // the pool Start made; nil with WithExecutor
	worker       *worker
	workerID     atomic.Uint64
	done         chan struct{} // closed when the worker has exited
	stopResult   []Timeout     // written by the worker before done closes
	releaseOnce  sync.Once
	released     chan struct{} // closed once every task has returned and the own pool is gone
	bubble       uint64        // the testing/synctest bubble New ran in; 0: none
	probeBubble  bool          // check each schedule for a bubble (inABubble)
}

// instances counts running timers, to warn once above 64, as Netty does.
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

// New returns a timer configured by opts, not yet started. It fails with
// an error wrapping ErrInvalidOption that names every invalid option.
func New(opts ...Option) (*HashedWheelTimer, error) {
	cfg := defaultConfig()
	var errs []error
	for i, opt := range opts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("%w: option %d of %d is nil", ErrInvalidOption, i+1, len(opts)))
		} else if err := opt(&cfg); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, cfg.validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h := &HashedWheelTimer{bubble: goid.Bubble()}
	h.init(cfg)
	return h, nil
}

func (h *HashedWheelTimer) init(cfg config) {
	h.shards = newShards(cfg.shards)
	h.shardMask = uint32(len(h.shards) - 1)
	h.clock, h.tickNanos, h.maxPending = cfg.clock, int64(cfg.tickDuration), cfg.maxPending
	h.config, h.executor = cfg, cfg.executor
	h.done, h.released = make(chan struct{}), make(chan struct{})
}

// initZero sets up a zero HashedWheelTimer. The caller holds startMu.
func (h *HashedWheelTimer) initZero() {
	if h.shards != nil {
		return
	}
	cfg := defaultConfig()
	_ = cfg.validate()
	h.init(cfg)
}

// Start starts the worker goroutine, as the first NewTimeout does. It
// returns nil if the timer is running and ErrStopped once it is stopped.
func (h *HashedWheelTimer) Start() error {
	if h.state.Load() == timerStarted {
		if h.now() < 0 || h.probeBubble && inABubble() {
			return h.bubbleError("Start")
		}
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
	if goid.Bubble() != h.bubble { // before initZero makes anything
		return h.bubbleError("Start")
	}
	h.initZero()
	if h.executor == nil {
		exec, err := antspool.New(dispatch.DefaultParallelism)
		if err != nil {
			return err
		}
		h.executor, h.internalPool = exec, exec
	}
	h.sleeper = h.config.sleeper
	if h.sleeper == nil {
		h.sleeper, _ = h.clock.Sleeper()
	}
	if w, ok := h.sleeper.(clockwork.Watcher); ok { // a fake clock's Advance looks at the timer
		h.watcher = w
		w.Watch(watched{h})
	}
	h.startNanos = h.clock.Nanotime()
	_, runtimeClock := h.clock.(*clock.Real)
	h.probeBubble = h.bubble == 0 && !runtimeClock
	h.worker = newWorker(h)
	countInstance(h.config.logger)
	go h.worker.run()
	h.state.Store(timerStarted)
	return nil
}

// bubbleError is the error of what, called in a testing/synctest bubble
// the timer was not made in.
func (h *HashedWheelTimer) bubbleError(what string) error {
	if h.bubble == 0 {
		return fmt.Errorf("%w: %s: the timer was made outside the bubble, whatever its clock: "+
			"make it with New inside the bubble and Stop it there", ErrSynctestBubble, what)
	}
	return fmt.Errorf("%w: %s: the timer was made in a bubble: start and use it in that bubble only",
		ErrSynctestBubble, what)
}

// NewTimeout schedules task to run once, after delay (to 8ns, rounded up;
// on the next tick if zero or less), on the timer's executor, starting the
// timer if needed. It fails with ErrNilTask for a nil task, ErrStopped
// after Stop and ErrTooManyPendingTimeouts at the WithMaxPendingTimeouts
// limit, scheduling nothing. It never blocks, and may be called from any
// goroutine; about once in a few thousand calls it yields the processor,
// so that the worker keeps up.
func (h *HashedWheelTimer) NewTimeout(task TimerTask, delay time.Duration) (Timeout, error) {
	if task == nil {
		return nil, ErrNilTask
	}
	if f, ok := task.(TaskFunc); ok && f == nil {
		return nil, ErrNilTask
	}
	t := &timeout{task: task}
	return asTimeout(t, h.scheduleTimeout(t, delay, 0))
}

// AfterFunc schedules f to run once, after delay, like time.AfterFunc. It
// fails as NewTimeout does, and with ErrNilTask for a nil f.
func (h *HashedWheelTimer) AfterFunc(delay time.Duration, f func()) (Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	t := &timeout{task: funcTask(f)}
	return asTimeout(t, h.scheduleTimeout(t, delay, 0))
}

// asTimeout returns nil, not a Timeout holding a nil *timeout, on error.
func asTimeout(t *timeout, err error) (Timeout, error) {
	if err != nil {
		return nil, err
	}
	return t, nil
}

// schedule makes a timeout of task, repeating every period ns if positive.
func (h *HashedWheelTimer) schedule(task TimerTask, delay time.Duration, period int64) (*timeout, error) {
	t := &timeout{task: task}
	if err := h.scheduleTimeout(t, delay, period); err != nil {
		return nil, err
	}
	return t, nil
}

// scheduleTimeout hands t, new, to the worker.
func (h *HashedWheelTimer) scheduleTimeout(t *timeout, delay time.Duration, period int64) error {
	if h.state.Load() != timerStarted {
		if err := h.startIfNeeded(); err != nil {
			return err
		}
	}
	if h.maxPending > 0 && !h.admit() {
		h.counters.rejectedFull.Add(1)
		return tooManyPending(h.maxPending)
	}
	now := h.now()
	if now < 0 || h.probeBubble && inABubble() {
		// A clock before the start: a bubble the timer was not started in.
		h.unadmit(1)
		return h.bubbleError("NewTimeout")
	}
	t.timer, t.period = h, period
	// A plain write: the push that publishes t orders it before any load.
	word := withDeadline(stateQueued, deadline(now, delay))
	*(*uint64)(unsafe.Pointer(&t.word)) = word
	if period == scheduledPeriod {
		t.task.(*scheduledTask).at = deadlineOf(word)
	}
	count, _, _, ok := h.pushTimeout(t)
	if !ok {
		h.unadmit(1) // Stop closed the intake first: never accepted
		h.counters.rejectedStopped.Add(1)
		return ErrStopped
	}
	h.nudgeWorker(uint64(count))
	if h.watcher != nil {
		h.watcher.Accepted()
	}
	return nil
}

// watched shows a timer to its clock.Fake.
type watched struct{ h *HashedWheelTimer }

func (w watched) Pending() int64 { return w.h.PendingTimeouts() }
func (w watched) Unseen() bool   { return !w.h.intakeEmpty() }
func (w watched) Worker() uint64 { return w.h.workerID.Load() }

// startIfNeeded starts the timer unless it runs, counting a refusal.
func (h *HashedWheelTimer) startIfNeeded() error {
	if h.state.Load() == timerStarted {
		return nil
	}
	err := h.Start()
	if errors.Is(err, ErrStopped) {
		h.counters.rejectedStopped.Add(1)
	}
	return err
}

// admit takes a place under the pending limit, or fails at the limit.
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

// unadmit gives back n places under the pending limit.
func (h *HashedWheelTimer) unadmit(n int64) {
	if h.maxPending > 0 {
		h.admitted.Add(-n)
	}
}

// PendingTimeouts returns the number of timeouts neither expired,
// cancelled nor returned by Stop (so 0 after it), a periodic one counting
// once; it is at most the WithMaxPendingTimeouts limit.
func (h *HashedWheelTimer) PendingTimeouts() int64 {
	return h.snapshot().pending
}

// now returns the clock in nanoseconds after the start.
func (h *HashedWheelTimer) now() int64 { return h.clock.Nanotime() - h.startNanos }

// tickDue returns the tick covering deadline: tick n covers (n·tick, (n+1)·tick].
func tickDue(deadline, tick int64) int64 { return (deadline - 1) / tick }

// deadline returns now + delay, clamped, and at least now + 1ns, so that
// it never falls in a tick already ended, processed or not.
func deadline(now int64, delay time.Duration) int64 {
	if delay <= 0 {
		delay = 1
	}
	if int64(delay) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(delay)
}

// instant returns start + offset, saturating at clockwork.Forever.
func instant(start, offset int64) int64 {
	if offset > clockwork.Forever-start {
		return clockwork.Forever
	}
	return start + offset
}
