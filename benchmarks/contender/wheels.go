package contender

import (
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/hierarchical"
	"github.com/wheeltimer/wheeltimer/benchmarks/minheap"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// afterFuncer is what hashedwheel, hierarchical and minheap have in common.
type afterFuncer interface {
	AfterFunc(delay time.Duration, f func()) (hashedwheel.Timeout, error)
	Stop() []hashedwheel.Timeout
}

// timeoutTimer adapts a timer whose handles are hashedwheel.Timeouts.
type timeoutTimer struct{ t afterFuncer }

func (w timeoutTimer) Schedule(delay time.Duration, f func()) (Handle, error) {
	to, err := w.t.AfterFunc(delay, f)
	if err != nil {
		return nil, err
	}
	return to, nil
}

func (w timeoutTimer) Cancel(h Handle) bool { return h.(hashedwheel.Timeout).Cancel() }

// Rearm is Timeout.Reset; where Reset refuses (the timeout has ended), the
// timeout is cancelled and its task scheduled anew, as a caller of Reset
// is told to do.
func (w timeoutTimer) Rearm(h Handle, delay time.Duration) (Handle, error) {
	to := h.(hashedwheel.Timeout)
	if to.Reset(delay) {
		return h, nil
	}
	to.Cancel()
	next, err := to.Timer().NewTimeout(to.Task(), delay)
	if err != nil {
		return h, err
	}
	return next, nil
}

func (w timeoutTimer) Close() { w.t.Stop() }

func hashedWheelContender(inline bool) Contender {
	c := Contender{
		Name:            "hashedwheel",
		NeverEarly:      true,
		Ticked:          true,
		ReleasesOnClose: true,
		Executor:        "its own ants pool (1024 goroutines); tasks due together start together",
		Note:            "this library: rounds-based wheel, lock-free intake, one worker",
	}
	if inline {
		c.Name = "hashedwheel-inline"
		c.Executor = "pool.Inline: on the worker goroutine"
		c.Note = "this library with pool.Inline, as Netty runs tasks by default"
	}
	c.New = func(cfg Config) (Timer, error) {
		opts := []hashedwheel.Option{
			hashedwheel.WithTickDuration(cfg.Tick),
			hashedwheel.WithTicksPerWheel(cfg.WheelSize),
			hashedwheel.WithLogger(Logger()),
		}
		if inline {
			opts = append(opts, hashedwheel.WithExecutor(pool.Inline))
		}
		h, err := hashedwheel.New(opts...)
		if err != nil {
			return nil, err
		}
		if err := h.Start(); err != nil {
			return nil, err
		}
		return timeoutTimer{h}, nil
	}
	return c
}

func hierarchicalContender() Contender {
	return Contender{
		Name:            "hierarchical",
		NeverEarly:      true,
		Ticked:          true,
		ReleasesOnClose: true,
		Executor:        "its own ants pool, through the core's internal/dispatch",
		Note:            "benchmarks/hierarchical: Kafka-style levels and delay queue of buckets, never early",
		New: func(cfg Config) (Timer, error) {
			t, err := hierarchical.New(
				hierarchical.WithTickDuration(cfg.Tick),
				hierarchical.WithWheelSize(cfg.WheelSize),
				hierarchical.WithLogger(Logger()),
			)
			if err != nil {
				return nil, err
			}
			return timeoutTimer{t}, nil
		},
	}
}

func minHeapContender() Contender {
	return Contender{
		Name:            "minheap",
		NeverEarly:      true,
		ReleasesOnClose: true,
		Executor:        "its own ants pool, through the core's internal/dispatch",
		Note:            "benchmarks/minheap: one mutex, indexed binary heap, one runtime timer",
		New: func(Config) (Timer, error) {
			t, err := minheap.New(minheap.WithLogger(Logger()))
			if err != nil {
				return nil, err
			}
			return timeoutTimer{t}, nil
		},
	}
}
