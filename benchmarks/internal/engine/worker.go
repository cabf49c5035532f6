package engine

import (
	"math"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
)

// run is the worker goroutine: expire under the lock, dispatch outside it,
// sleep until the structure's next instant or until woken, until Stop.
func (g *Engine[L]) run() {
	g.workerID.Store(goid.Current())
	defer g.exit()
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	for {
		g.mu.Lock()
		if g.stopped {
			g.mu.Unlock()
			return
		}
		due := g.s.Expire(g.now(), g.due)
		g.pending -= int64(len(due))
		next := g.s.Next()
		g.wakeAt = next
		g.mu.Unlock()

		// The dispatcher copies the tasks: the slices are reused.
		for _, e := range due {
			g.handed = append(g.handed, dispatch.Due[*Entry[L]]{Task: e})
		}
		clear(due)
		g.dispatcher.Dispatch(g.handed)
		g.due, g.handed = due[:0], g.handed[:0]
		g.sleepUntil(sleep, next)
	}
}

// sleepUntil blocks until the instant next, a wake-up or Stop. It may
// return early; the loop re-checks.
func (g *Engine[L]) sleepUntil(t *time.Timer, next int64) {
	if next == math.MaxInt64 {
		select {
		case <-g.wake:
		case <-g.stop:
		}
		return
	}
	d := next - g.now()
	if d <= 0 {
		return
	}
	// Since Go 1.23 Reset and Stop leave no stale value in t.C.
	t.Reset(time.Duration(d))
	select {
	case <-t.C:
	case <-g.wake:
	case <-g.stop:
	}
	t.Stop()
}

// exit tells the dispatcher that nothing more comes, releases the engine's
// own executor (tasks it accepted still run) and lets Stop go on to wait
// for the dispatched tasks.
func (g *Engine[L]) exit() {
	g.dispatcher.Close()
	if g.internalPool != nil {
		g.internalPool.Release()
	}
	close(g.done)
}
