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

// The timer's data: the HashedWheelTimer and its shards, which the code
// of every layer above reads, declared below it all (docs/design.md, the
// files in layers).

// The states of a HashedWheelTimer, as Netty's WORKER_STATE_*.
const (
	timerInit int32 = iota
	timerStarted
	timerStopped
)

// HashedWheelTimer is a Timer backed by a hashed wheel and one worker
// goroutine. Make one with New; its methods are safe for concurrent use.
// The zero value is a timer with the default options, as New() makes.
//
// A timer is meant to be shared: each holds a goroutine and, by default, a
// goroutine pool, so an application needs few of them. Call Stop when done.
type HashedWheelTimer struct {
	// Read by every NewTimeout; written only at start and stop, or, for
	// idle, when the worker falls asleep until the next due timeout.
	state      atomic.Int32
	idle       atomic.Bool // the worker sleeps past its next tick: producers must wake it
	clock      clock.Clock
	startNanos int64 // clock reading at start
	tickNanos  int64
	shards     []shard
	shardMask  uint32
	spread     atomic.Bool // producers have met on a stack: new timeouts go by processor (pushTimeout)
	maxPending int64
	sleeper    clockwork.Sleeper
	watcher    clockwork.Watcher // the sleeper, on a clock.Fake: told of each accepted timeout; else nil

	_ cpu.CacheLinePad

	admitted atomic.Int64 // pending timeouts; kept only with a limit
	counters counters

	startMu      sync.Mutex
	config       config
	executor     pool.Executor
	internalPool *antspool.Pool // the pool Start made, which Stop releases; nil with WithExecutor
	worker       *worker
	workerID     atomic.Uint64 // goroutine id of the worker
	done         chan struct{} // closed when the worker has exited
	stopResult   []Timeout     // written by the worker before done closes; taken by the first Stop after
	releaseOnce  sync.Once
	released     chan struct{} // closed once every task has returned and the own pool is gone
	bubble       uint64        // the testing/synctest bubble New ran in; 0: none
	probeBubble  bool          // made outside every bubble, on a clock not the runtime's: check each schedule
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

// New returns a timer configured by opts, not yet started. It fails if an
// option is invalid, with an error wrapping ErrInvalidOption that names
// every invalid option and its value, joined by errors.Join.
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

// init sets up a timer not yet started; New calls it, and Start and Stop
// call it with the defaults for a zero HashedWheelTimer.
func (h *HashedWheelTimer) init(cfg config) {
	shards := newShards(cfg.shards)
	h.clock = cfg.clock
	h.tickNanos = int64(cfg.tickDuration)
	h.shards = shards
	h.shardMask = uint32(len(shards) - 1)
	h.maxPending = cfg.maxPending
	h.config = cfg
	h.executor = cfg.executor
	h.done = make(chan struct{})
	h.released = make(chan struct{})
}

// initZero sets up a zero HashedWheelTimer with the default options. The
// caller holds startMu.
func (h *HashedWheelTimer) initZero() {
	if h.shards != nil {
		return
	}
	cfg := defaultConfig()
	_ = cfg.validate() // the defaults are valid
	h.init(cfg)
}

// Start starts the worker goroutine. Calling it is optional: the first
// NewTimeout starts the timer. It returns nil if the timer is running and
// ErrStopped once Stop has been called.
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
	if goid.Bubble() != h.bubble { // before initZero: nothing made in the bubble
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
	if h.sleeper == nil { // the default clock's
		h.sleeper, _ = h.clock.Sleeper()
	}
	if w, ok := h.sleeper.(clockwork.Watcher); ok { // a fake clock: Advance and BlockUntilContext look at the timer
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

// bubbleError is the error of what, called on a timer in a
// testing/synctest bubble it was not made in (a zero HashedWheelTimer is
// made in none): its goroutines, outside the bubble, would run the
// bubble's tasks and send on the bubble's channels, which kills the test
// binary; and a timer made in a bubble cannot start outside it, where it
// would outlive it.
func (h *HashedWheelTimer) bubbleError(what string) error {
	if h.bubble == 0 {
		return fmt.Errorf("%w: %s: the timer was made outside the bubble, whatever its clock: "+
			"make it with New inside the bubble and Stop it there", ErrSynctestBubble, what)
	}
	return fmt.Errorf("%w: %s: the timer was made in a bubble: start and use it in that bubble only",
		ErrSynctestBubble, what)
}

// NewTimeout schedules task to run once, after delay, on the timer's
// executor, and starts the timer if needed. A zero or negative delay runs
// it on the next tick; a delay too large to represent is clamped. The
// deadline is kept to 8ns, rounded up.
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
	t := &timeout{task: task}
	if err := h.scheduleTimeout(t, delay, 0); err != nil {
		return nil, err // not a Timeout holding a nil *timeout
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
	t := &timeout{task: funcTask(f)}
	if err := h.scheduleTimeout(t, delay, 0); err != nil {
		return nil, err // not a Timeout holding a nil *timeout
	}
	return t, nil
}

// schedule makes a timeout of task due after delay, repeating every period
// nanoseconds if period is positive, at the times of its Scheduler if it
// is scheduledPeriod, and hands it to the worker.
func (h *HashedWheelTimer) schedule(task TimerTask, delay time.Duration, period int64) (*timeout, error) {
	t := &timeout{task: task}
	if err := h.scheduleTimeout(t, delay, period); err != nil {
		return nil, err
	}
	return t, nil
}

// scheduleTimeout hands t, new, whose task is set, to the worker, due
// after delay and repeating every period nanoseconds if period is not 0.
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
		// The clock read earlier than at the start: another time domain, a
		// testing/synctest bubble the timer was not started in.
		if h.maxPending > 0 {
			h.admitted.Add(-1)
		}
		return h.bubbleError("NewTimeout")
	}
	t.timer, t.period = h, period
	// A plain write: t is not yet published, and the push that publishes
	// it orders the write before any load of the word.
	word := withDeadline(stateQueued, deadline(now, delay))
	*(*uint64)(unsafe.Pointer(&t.word)) = word
	if period == scheduledPeriod { // the deadline its first run's wall time stands for
		t.task.(*scheduledTask).at = deadlineOf(word)
	}
	count, _, _, ok := h.pushTimeout(t)
	if !ok {
		// Stop closed the intake first: the timeout was never accepted.
		if h.maxPending > 0 {
			h.admitted.Add(-1)
		}
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
	if err := h.Start(); err != nil {
		if errors.Is(err, ErrStopped) {
			h.counters.rejectedStopped.Add(1)
		}
		return err
	}
	return nil
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

// PendingTimeouts returns the number of timeouts that are scheduled and
// have neither expired, been cancelled nor been returned by Stop; a
// periodic timeout counts as one until it is cancelled. It is never more than the
// limit set by WithMaxPendingTimeouts, and 0 after Stop.
func (h *HashedWheelTimer) PendingTimeouts() int64 {
	return h.snapshot().pending
}

// now returns the clock, in nanoseconds after the start.
func (h *HashedWheelTimer) now() int64 { return h.clock.Nanotime() - h.startNanos }

// tickDue returns the tick of length tick covering deadline, ≥ 0: tick n
// covers (n·tick, (n+1)·tick], so a deadline on a tick's end is due at
// that end. Go's division truncates, so deadline 0 gives tick 0.
func tickDue(deadline, tick int64) int64 { return (deadline - 1) / tick }

// deadline returns the deadline of a timeout made at now with delay, in
// nanoseconds after the start: 1ns after now for a delay of zero or less,
// and clamped instead of overflowing. A deadline is after its call, so
// that it never falls in a tick that had ended by then: a timeout made on
// a tick's end with no delay runs at the next one, whether or not the
// worker has processed the tick just ended.
func deadline(now int64, delay time.Duration) int64 {
	if delay <= 0 {
		delay = 1
	}
	if int64(delay) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(delay)
}

// instant returns the clock reading at offset after start, saturating at
// clockwork.Forever instead of overflowing (a tick can be long enough that its
// end lies beyond the clock's range).
func instant(start, offset int64) int64 {
	if offset > clockwork.Forever-start {
		return clockwork.Forever
	}
	return start + offset
}
