package hashedwheel

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
)

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
		if h.now() < 0 || h.inABubbleNotItsOwn() {
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
	h.sleeper = clockwork.NewSleeper(h.clock)
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
		return nil, err
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
	if err := h.startIfNeeded(); err != nil {
		return err
	}
	if h.maxPending > 0 && !h.admit() {
		h.counters.rejectedFull.Add(1)
		return tooManyPending(h.maxPending)
	}
	now := h.now()
	if now < 0 || h.inABubbleNotItsOwn() {
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
