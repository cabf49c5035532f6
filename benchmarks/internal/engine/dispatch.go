package engine

import (
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/pool"
)

// newDispatcher returns the dispatcher that hands the engine's expired
// entries to exec: the core's own dispatch code, so that every timer built
// on this engine starts due tasks exactly as hashedwheel does and the
// benchmarks compare data structures only.
func (g *Engine[L]) newDispatcher(exec pool.Executor) *dispatch.Dispatcher[*Entry[L]] {
	cfg := dispatch.Config[*Entry[L]]{
		Executor:    exec,
		Run:         (*Entry[L]).run,
		Parallelism: parallelism(exec),
		Refused: func(err error) {
			g.logger.Warn("executor refused expired tasks; running them on a new goroutine", "error", err)
		},
	}
	if exec == pool.Inline {
		cfg.Executor = nil // the dispatcher runs them in order on the worker
	}
	return dispatch.New(cfg)
}

// parallelism is the most due tasks one dispatch starts at once: the
// executor's size if it tells it (a Cap method, as ants pools have), else
// pool.DefaultSize, the size of the pool the engine makes for itself.
func parallelism(exec pool.Executor) int {
	if c, ok := exec.(interface{ Cap() int }); ok && c.Cap() > 0 {
		return c.Cap()
	}
	return pool.DefaultSize
}
