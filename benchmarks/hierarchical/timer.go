package hierarchical

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/engine"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Defaults.
const (
	// DefaultTickDuration is level 0's tick: the timer's resolution.
	DefaultTickDuration = time.Millisecond
	// DefaultWheelSize is the number of buckets per level, as in Linux.
	DefaultWheelSize = 64
)

// shell is embedded under this unexported name so that only its methods
// are public.
type shell = engine.Shell[link]

// Timer is a hierarchical timing wheel. Make one with New; its methods are
// safe for concurrent use. A task never runs before its deadline, and runs
// at the end of the level-0 tick that holds the deadline, later only under
// load; a zero or negative delay runs it at the end of the current tick.
// NewTimeout, AfterFunc, Stop and PendingTimeouts, shared with the other
// timers built on the engine, keep hashedwheel's contract.
type Timer struct {
	shell          // NewTimeout, AfterFunc, Stop and PendingTimeouts
	wheels *wheels // guarded by the engine's lock
}

var _ hashedwheel.Timer = (*Timer)(nil)

// Option configures a Timer made by New.
type Option func(*config) error

type config struct {
	tick   time.Duration
	size   int
	engine engine.Config
}

// WithTickDuration sets level 0's tick, the timer's resolution. Default
// 1ms. It must be positive; the runtime cannot sleep much less than 1ms.
func WithTickDuration(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("hierarchical: WithTickDuration(%v): expected > 0", d)
		}
		c.tick = d
		return nil
	}
}

// WithWheelSize sets the number of buckets per level. Default 64. It must
// be at least 2.
func WithWheelSize(n int) Option {
	return func(c *config) error {
		if n < 2 || n > 1<<24 {
			return fmt.Errorf("hierarchical: WithWheelSize(%d): expected 2 to 1<<24", n)
		}
		c.size = n
		return nil
	}
}

// WithExecutor sets the executor that runs expired tasks; the caller owns
// it. Without it the timer runs tasks on a goroutine pool of its own of
// 1024 goroutines, released by Stop, as hashedwheel does.
func WithExecutor(e pool.Executor) Option {
	return func(c *config) error {
		if e == nil {
			return fmt.Errorf("hierarchical: WithExecutor(nil)")
		}
		c.engine.Executor = e
		return nil
	}
}

// WithLogger sets the logger for panicking tasks and refused executions.
// Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("hierarchical: WithLogger(nil)")
		}
		c.engine.Logger = l
		return nil
	}
}

// New returns a running timer configured by opts, or an error naming an
// invalid option.
func New(opts ...Option) (*Timer, error) {
	cfg := config{tick: DefaultTickDuration, size: DefaultWheelSize}
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	t := &Timer{wheels: newWheels(int64(cfg.tick), cfg.size)}
	s, err := engine.Start[link](t, t.wheels, cfg.engine)
	if err != nil {
		return nil, err
	}
	t.shell = s
	return t, nil
}

// Levels returns the number of levels created so far.
func (t *Timer) Levels() int {
	var n int
	engine.Inspect(&t.shell, func() { n = len(t.wheels.levels) })
	return n
}
