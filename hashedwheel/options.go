package hashedwheel

import (
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"reflect"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Defaults: the shortest tick (Netty's 100ms is too coarse), 8s a turn.
const (
	DefaultTickDuration  = time.Millisecond
	DefaultTicksPerWheel = 8192
	MinTickDuration      = time.Millisecond // the shortest tick: the runtime cannot sleep less
	MaxTicksPerWheel     = 1 << 21          // the largest wheel New accepts (48 MiB)
)

// Option configures a HashedWheelTimer made by New.
type Option func(*config) error

type config struct {
	tickDuration  time.Duration
	ticksPerWheel int // a power of two
	ticksAsGiven  int // for error messages
	maxPending    int64
	executor      pool.Executor // nil: the timer's own ants pool
	logger        *slog.Logger
	clock         clock.Clock
	sleeper       clockwork.Sleeper
	shards        int // 0: by GOMAXPROCS
}

func defaultConfig() config {
	return config{
		tickDuration:  DefaultTickDuration,
		ticksPerWheel: DefaultTicksPerWheel,
		ticksAsGiven:  DefaultTicksPerWheel,
		logger:        slog.Default(),
		clock:         clock.NewReal(),
	}
}

// WithTickDuration sets the time between ticks, the timer's resolution: a
// timeout fires within about a tick after its deadline. It must be at
// least MinTickDuration; a longer tick costs the worker less.
func WithTickDuration(d time.Duration) Option {
	return func(c *config) error {
		if d < MinTickDuration {
			return invalidOption("WithTickDuration", d, "at least MinTickDuration, "+MinTickDuration.String())
		}
		c.tickDuration = d
		return nil
	}
}

// WithTicksPerWheel sets the number of buckets, 24 bytes each, in [1,
// MaxTicksPerWheel], rounded up to a power of two. A timeout more than a
// turn away is visited every turn: cover the usual delay.
func WithTicksPerWheel(n int) Option {
	return func(c *config) error {
		if n < 1 || n > MaxTicksPerWheel {
			return invalidOption("WithTicksPerWheel", n, fmt.Sprintf("1 to MaxTicksPerWheel, %d", MaxTicksPerWheel))
		}
		c.ticksPerWheel = 1 << bits.Len(uint(n-1))
		c.ticksAsGiven = n
		return nil
	}
}

// WithMaxPendingTimeouts limits the pending timeouts: at the limit,
// NewTimeout fails with ErrTooManyPendingTimeouts until one expires or is
// cancelled. Zero or less (the default): no limit.
func WithMaxPendingTimeouts(n int64) Option {
	return func(c *config) error {
		c.maxPending = max(n, 0)
		return nil
	}
}

// WithExecutor sets the executor that runs expired tasks, which the caller
// owns: Stop waits for the tasks but does not release it. Its Execute must
// not block (see pool.Executor). Tasks due together are handed over
// together, at most Cap() at once (1024 without a Cap method; read once,
// as the timer starts), the rest waiting in due order. pool.Inline runs
// them one at a time on the worker, in deadline order, as Netty does. By
// default, tasks run in parallel on the timer's own pool of 1024
// goroutines.
func WithExecutor(e pool.Executor) Option {
	return func(c *config) error {
		if isNil(e) {
			return invalidOption("WithExecutor", e, "a non-nil pool.Executor")
		}
		c.executor = e
		return nil
	}
}

// WithLogger sets the logger for errors and warnings, such as a panicking
// task, named in the attribute task. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalidOption("WithLogger", l, "a non-nil *slog.Logger")
		}
		c.logger = l
		return nil
	}
}

// WithClock sets the time source, clock.NewReal() by default;
// *clock.Fake.Advance returns once every task due by then has run. A
// custom clock embeds *clock.Real or *clock.Fake; a zero Fake is refused.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) error {
		if isNil(c) {
			return invalidOption("WithClock", c, "a non-nil clock.Clock")
		}
		s, err := c.Sleeper()
		if err != nil {
			return fmt.Errorf("%w: WithClock: %w", ErrInvalidOption, err)
		}
		cfg.clock, cfg.sleeper = c, s
		return nil
	}
}

// isNil reports whether v is nil or holds a nil pointer, map, func...
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch v := reflect.ValueOf(v); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// validate checks that tick arithmetic never overflows.
func (c *config) validate() error {
	if limit := math.MaxInt64 / int64(c.ticksPerWheel); int64(c.tickDuration) >= limit {
		return fmt.Errorf("%w: WithTickDuration(%v) with WithTicksPerWheel(%d): one turn of the wheel "+
			"must be shorter than %v; expected a tick below %v for this wheel, or a smaller wheel",
			ErrInvalidOption, c.tickDuration, c.ticksAsGiven, time.Duration(math.MaxInt64), time.Duration(limit))
	}
	return nil
}
