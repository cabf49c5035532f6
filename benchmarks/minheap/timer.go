package minheap

import (
	"fmt"
	"log/slog"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/engine"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// shell is embedded under this unexported name so that only its methods
// are public.
type shell = engine.Shell[link]

// Timer is a min-heap timer. Make one with New; its methods are safe for
// concurrent use. A task never runs before its deadline; a zero or negative
// delay runs it at once.
// NewTimeout, AfterFunc, Stop and PendingTimeouts, shared with the other
// timers built on the engine, keep hashedwheel's contract.
type Timer struct {
	shell       // NewTimeout, AfterFunc, Stop and PendingTimeouts
	heap  *heap // guarded by the engine's lock
}

var _ hashedwheel.Timer = (*Timer)(nil)

// Option configures a Timer made by New.
type Option func(*config) error

type config struct {
	engine engine.Config
}

// WithExecutor sets the executor that runs expired tasks; the caller owns
// it. Without it the timer runs tasks on a goroutine pool of its own of
// 1024 goroutines, released by Stop, as hashedwheel does.
func WithExecutor(e pool.Executor) Option {
	return func(c *config) error {
		if e == nil {
			return fmt.Errorf("minheap: WithExecutor(nil)")
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
			return fmt.Errorf("minheap: WithLogger(nil)")
		}
		c.engine.Logger = l
		return nil
	}
}

// New returns a running timer configured by opts, or an error naming an
// invalid option.
func New(opts ...Option) (*Timer, error) {
	var cfg config
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	t := &Timer{heap: &heap{}}
	s, err := engine.Start[link](t, t.heap, cfg.engine)
	if err != nil {
		return nil, err
	}
	t.shell = s
	return t, nil
}
