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

// Timer is a hierarchical timing wheel. Make one with New; its methods are
// safe for concurrent use. A task never runs before its deadline, and runs
// at the end of the level-0 tick that holds the deadline, later only under
// load.
type Timer struct {
	engine *engine.Engine[link]
	wheels *wheels // guarded by the engine's lock
}

var _ hashedwheel.Timer = (*Timer)(nil)

// Option configures a Timer made by New.
type Option func(*config) error

type config struct {
	tick     time.Duration
	size     int
	executor pool.Executor
	logger   *slog.Logger
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
// it. Without it the timer runs tasks on its own pool.Ants of
// pool.DefaultSize goroutines, released by Stop, as hashedwheel does.
func WithExecutor(e pool.Executor) Option {
	return func(c *config) error {
		if e == nil {
			return fmt.Errorf("hierarchical: WithExecutor(nil)")
		}
		c.executor = e
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
		c.logger = l
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
	e, err := engine.New[link](t, t.wheels, engine.Config{Executor: cfg.executor, Logger: cfg.logger})
	if err != nil {
		return nil, err
	}
	t.engine = e
	return t, nil
}

// NewTimeout schedules task to run once, after delay, on the timer's
// executor. A zero or negative delay runs it at the end of the current
// tick. It fails with hashedwheel.ErrNilTask or hashedwheel.ErrStopped,
// and then schedules nothing.
func (t *Timer) NewTimeout(task hashedwheel.TimerTask, delay time.Duration) (hashedwheel.Timeout, error) {
	return t.engine.NewTimeout(task, delay)
}

// AfterFunc schedules f to run once, after delay, like time.AfterFunc. It
// fails as NewTimeout does, and with hashedwheel.ErrNilTask for a nil f.
func (t *Timer) AfterFunc(delay time.Duration, f func()) (hashedwheel.Timeout, error) {
	if f == nil {
		return nil, hashedwheel.ErrNilTask
	}
	return t.engine.NewTimeout(engine.FuncTask(f), delay)
}

// Stop stops the timer and returns the timeouts that had neither expired
// nor been cancelled, each now cancelled. It releases the timer's own
// executor and returns once every task already handed over has returned;
// called from a task, it waits for nothing. Later calls return nil.
func (t *Timer) Stop() []hashedwheel.Timeout { return t.engine.Stop() }

// PendingTimeouts returns the number of timeouts neither expired nor
// cancelled; 0 after Stop.
func (t *Timer) PendingTimeouts() int64 { return t.engine.Pending() }

// Levels returns the number of levels created so far.
func (t *Timer) Levels() int {
	var n int
	t.engine.Inspect(func() { n = len(t.wheels.levels) })
	return n
}
