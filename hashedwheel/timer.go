package hashedwheel

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

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
// goroutine; its methods are safe for concurrent use. Make one with New,
// or use the zero value for the default options. It holds a goroutine and
// a pool: share it, and call Stop when done.
type HashedWheelTimer struct {
	// Read by every NewTimeout; written only at start and stop, or, for
	// idle, while the worker sleeps past its next tick.
	state      atomic.Int32
	idle       atomic.Bool
	clock      clock.Clock
	startNanos int64
	tickNanos  int64
	shards     []shard
	shardMask  uint32
	spread     atomic.Bool // new timeouts go by processor (pushTimeouts)
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
	h.init(defaultConfig())
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

// watched shows a timer to its clock.Fake.
type watched struct{ h *HashedWheelTimer }

func (w watched) Pending() int64 { return w.h.PendingTimeouts() }
func (w watched) Unseen() bool   { return !w.h.intakeEmpty() }
func (w watched) Worker() uint64 { return w.h.workerID.Load() }

// startIfNeeded starts the timer unless it runs, counting the refusal of
// n timeouts.
func (h *HashedWheelTimer) startIfNeeded(n uint64) error {
	if h.state.Load() == timerStarted {
		return nil
	}
	err := h.Start()
	if errors.Is(err, ErrStopped) {
		h.counters.rejectedStopped.Add(n)
	}
	return err
}

// admit takes n places under the pending limit, all or none.
func (h *HashedWheelTimer) admit(n int64) bool {
	for {
		admitted := h.admitted.Load()
		if admitted > h.maxPending-n {
			return false
		}
		if h.admitted.CompareAndSwap(admitted, admitted+n) {
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
// cancelled nor returned by Stop (none after it), a periodic one counting
// once: at most the WithMaxPendingTimeouts limit.
func (h *HashedWheelTimer) PendingTimeouts() int64 {
	return h.balanced().Pending
}
