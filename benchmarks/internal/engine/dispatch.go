package engine

import (
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/pool"
)

// newDispatcher returns the dispatcher that hands the engine's expired
// entries to exec: the core's own dispatch code, so that every timer built
// on this engine starts due tasks exactly as hashedwheel does, at most the
// executor's size at once, and the benchmarks compare data structures only.
func (g *Engine[L]) newDispatcher(exec pool.Executor) *dispatch.Dispatcher[*Entry[L]] {
	cfg := dispatch.Config[*Entry[L]]{
		Executor: exec, // Parallelism: its size
		Run:      (*Entry[L]).run,
		Refused: func(err error) {
			g.logger.Warn("executor refused expired tasks; running them on a new goroutine", "error", err)
		},
	}
	if exec == pool.Inline {
		cfg.Executor = nil // the dispatcher runs them in order on the worker
	}
	return dispatch.New(cfg)
}
