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

// Defaults. Netty's tick is 100ms, too coarse for the request deadlines Go
// servers give context.WithTimeout: the default tick is the shortest the
// timer keeps, and the wheel covers about eight seconds with it.
const (
	DefaultTickDuration  = time.Millisecond
	DefaultTicksPerWheel = 8192
	// MinTickDuration is the shortest tick New accepts: the runtime's
	// timers cannot sleep less (Netty raises shorter ticks to 1ms for the
	// same reason).
	MinTickDuration = time.Millisecond
	// MaxTicksPerWheel is the largest wheel New accepts: its buckets take
	// 48 MiB.
	MaxTicksPerWheel = 1 << 21
)

// Option configures a HashedWheelTimer made by New.
type Option func(*config) error

// config is what the options build; New validates it as a whole.
type config struct {
	tickDuration  time.Duration
	ticksPerWheel int // a power of two
	ticksAsGiven  int // WithTicksPerWheel's argument, for error messages
	maxPending    int64
	executor      pool.Executor // nil: New's own ants pool
	logger        *slog.Logger
	clock         clock.Clock
	sleeper       clockwork.Sleeper // the clock's, for the worker
	shards        int               // 0: by GOMAXPROCS
}

func defaultConfig() config {
	return config{
		tickDuration:  DefaultTickDuration,
		ticksPerWheel: DefaultTicksPerWheel,
		logger:        slog.Default(),
		clock:         clock.NewReal(),
	}
}

// WithTickDuration sets the time between two ticks of the wheel, which is
// the timer's resolution: a timeout fires within about one tick after its
// deadline. Default DefaultTickDuration, 1ms. It must be at least
// MinTickDuration, 1ms: the timer could not keep a shorter one. A longer
// tick costs the worker less while timeouts keep coming and going.
func WithTickDuration(d time.Duration) Option {
	return func(c *config) error {
		if d < MinTickDuration {
			return invalidOption("WithTickDuration", d, "at least MinTickDuration, "+MinTickDuration.String())
		}
		c.tickDuration = d
		return nil
	}
}

// WithTicksPerWheel sets the number of buckets in the wheel, rounded up to a
// power of two. Default DefaultTicksPerWheel, 8192. It must be in [1,
// MaxTicksPerWheel]; each bucket takes 24 bytes. A
// timeout whose delay exceeds ticksPerWheel·tickDuration is visited once per
// turn of the wheel until it is due, so size the wheel to cover the usual
// delay.
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

// WithMaxPendingTimeouts limits the number of pending timeouts: once it is
// reached, NewTimeout fails with ErrTooManyPendingTimeouts until a pending
// timeout expires or a Cancel of one returns true. Zero or a
// negative value, the default, means no limit.
func WithMaxPendingTimeouts(n int64) Option {
	return func(c *config) error {
		c.maxPending = max(n, 0)
		return nil
	}
}

// WithExecutor sets the executor that runs expired tasks. The caller owns
// it: Stop waits for the timer's tasks but does not release it.
//
// Tasks that come due together are handed to the executor together, each
// goroutine taking the next task as it finishes the last, so that a slow
// task holds up no other while the executor has room. The timer hands it
// at most its size of tasks at once, across all the ticks whose tasks
// wait: what its method Cap() int returns, if it has one, else 1024. The
// rest wait in the timer, in the order they came due, and start as the
// executor's goroutines free up. pool.Inline instead runs tasks on the
// timer's worker goroutine, as Netty does by default: one at a time, those
// due in the same tick in deadline order, and a slow task delays every
// later one and the wheel. Without this option the timer runs tasks on a
// goroutine pool of its own of 1024 goroutines, as pool.NewAnts(0) makes,
// in parallel and in no particular order, and Stop releases it.
func WithExecutor(e pool.Executor) Option {
	return func(c *config) error {
		if isNil(e) {
			return invalidOption("WithExecutor", e, "a non-nil pool.Executor")
		}
		c.executor = e
		return nil
	}
}

// WithLogger sets the logger for errors and warnings: a panicking task, a
// failing executor, a schedule that ended on a fault. Default
// slog.Default(). The line of a task or hook that panicked or called
// runtime.Goexit names the task in its attribute task.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalidOption("WithLogger", l, "a non-nil *slog.Logger")
		}
		c.logger = l
		return nil
	}
}

// WithClock sets the timer's time source. Default clock.NewReal(). A test
// gives a *clock.Fake, made anywhere, even at package level, and moves it
// with Advance: when Advance returns, every task due by then has run. The
// contexts a stopped or full timer falls back to (see WithDeadline) follow
// a clock.Fake too, through its AfterFunc; on a real clock they use the
// runtime's timers. A custom clock embeds *clock.Real or *clock.Fake. A
// clock that cannot keep time, the zero clock.Fake, is refused, with an
// error that names clock.NewFake.
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

// isNil reports whether v is nil, or an interface holding a nil pointer,
// map, channel, function or slice, which would panic on first use.
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

// validate checks what single options cannot: the tick against the wheel
// size, so that tick arithmetic never overflows.
func (c *config) validate() error {
	if limit := math.MaxInt64 / int64(c.ticksPerWheel); int64(c.tickDuration) >= limit {
		wheel := c.ticksAsGiven
		if wheel == 0 {
			wheel = c.ticksPerWheel
		}
		return fmt.Errorf("%w: WithTickDuration(%v) with WithTicksPerWheel(%d): one turn of the wheel "+
			"must be shorter than %v; expected a tick below %v for this wheel, or a smaller wheel",
			ErrInvalidOption, c.tickDuration, wheel, time.Duration(math.MaxInt64), time.Duration(limit))
	}
	return nil
}
