package engine

import (
	"fmt"
	"runtime"
)

// The batching below copies hashedwheel's dispatch policy on purpose: the
// benchmarks compare data structures, so every timer built on this engine
// hands expired tasks to its executor exactly as hashedwheel does.

// maxBatch bounds the tasks handed to the executor in one call.
const maxBatch = 256

// batchesPerCPU is how many batches per CPU a large expiry is split into, so
// that the executor can spread it over every core.
const batchesPerCPU = 4

// batchSize returns how many of n expired tasks to hand over per call: one
// each when there are few, so that they run in parallel, up to maxBatch
// when there are many.
func batchSize(n int) int {
	return min(max(n/(runtime.GOMAXPROCS(0)*batchesPerCPU), 1), maxBatch)
}

// batch is a run of expired entries handed to the executor as one task.
type batch[L any] []*Entry[L]

func (b batch[L]) run() {
	for _, e := range b {
		e.run()
	}
}

// dispatch hands the expired entries to the executor; with pool.Inline they
// run here, on the worker goroutine, one after another.
func (g *Engine[L]) dispatch(due []*Entry[L]) {
	if g.inline {
		batch[L](due).run()
		return
	}
	size := batchSize(len(due))
	for len(due) > 0 {
		n := min(size, len(due))
		b := make(batch[L], n)
		copy(b, due[:n])
		due = due[n:]
		g.execute(b)
	}
}

// execute hands one batch to the executor. If the executor refuses it, or
// panics, the batch runs on a goroutine of its own: an expired task is never
// lost.
func (g *Engine[L]) execute(b batch[L]) {
	if err := safeExecute(g.executor, b.run); err != nil {
		g.logger.Warn("executor refused expired tasks; running them on a new goroutine",
			"tasks", len(b), "error", err)
		go b.run()
	}
}

func safeExecute(e interface{ Execute(func()) error }, task func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("executor panicked: %v", r)
		}
	}()
	return e.Execute(task)
}
