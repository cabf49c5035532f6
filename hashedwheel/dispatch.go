package hashedwheel

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// maxBatch bounds the tasks handed to the executor in one call. A tick
// with many expired timeouts is split into batches so that the executor is
// called a few times per tick instead of once per timeout (about 1µs each
// with a goroutine pool), while several batches still run in parallel.
const maxBatch = 256

// batchesPerCPU is how many batches per CPU a large tick is split into, so
// that the pool can spread one tick's tasks over every core.
const batchesPerCPU = 4

// batchSize returns how many of n expired tasks to hand over per call: one
// each when there are few, so that they run in parallel, up to maxBatch
// when there are many.
func batchSize(n int) int {
	return min(max(n/(runtime.GOMAXPROCS(0)*batchesPerCPU), 1), maxBatch)
}

// batch is a run of expired timeouts handed to the executor as one task.
// It runs at most once each time the worker hands it out: if the executor
// fails in a way that leaves unclear whether it ran the batch (a panic),
// the fallback that runs it again finds it claimed when it did.
//
// Batches are recycled, so that a storm of expiries costs the worker no
// allocation: while the garbage collector marks, every allocation is
// charged marking work, which would delay the worker's next tick.
type batch struct {
	timeouts []*timeout
	claimed  atomic.Bool
	runFunc  func() // b.run, made once: a method value allocates
}

// batches holds the batches that have run, for reuse.
var batches sync.Pool

// newBatch returns an unclaimed batch of the given timeouts.
func newBatch(due []*timeout) *batch {
	b, _ := batches.Get().(*batch)
	if b == nil {
		b = &batch{timeouts: make([]*timeout, 0, maxBatch)}
		b.runFunc = b.run
	}
	b.timeouts = append(b.timeouts[:0], due...)
	b.claimed.Store(false)
	return b
}

// run runs the batch unless it was claimed already.
func (b *batch) run() {
	if b.claimed.CompareAndSwap(false, true) {
		b.runClaimed()
	}
}

// runClaimed runs the tasks of a batch its caller has claimed, then
// recycles it.
func (b *batch) runClaimed() {
	runAll(b.timeouts)
	clear(b.timeouts) // let the timeouts be collected
	b.timeouts = b.timeouts[:0]
	batches.Put(b)
}

// runAll runs the tasks of due timeouts, one after another.
func runAll(due []*timeout) {
	for _, t := range due {
		t.run()
	}
}

// dispatch hands the expired timeouts collected so far to the executor.
// With pool.Inline they run here, on the worker goroutine, one after
// another in deadline order: producers reach the worker through several
// stacks, so the order in which they arrived says nothing. A pool runs them
// in parallel, in no order, so they are not sorted for it.
func (w *worker) dispatch() {
	due := w.due
	if len(due) == 0 {
		return
	}
	w.due = due[:0]
	defer clear(due) // let the timeouts be collected
	if w.inline {
		w.sortByDeadline(due)
		runAll(due)
		return
	}
	size := batchSize(len(due))
	for len(due) > 0 {
		n := min(size, len(due))
		b := newBatch(due[:n])
		due = due[n:]
		w.execute(b)
	}
}

// deadlineOf pairs a timeout with its deadline, so that sorting compares
// contiguous keys instead of chasing a pointer per comparison.
type deadlineOf struct {
	deadline int64
	timeout  *timeout
}

// sortByDeadline sorts due by deadline.
func (w *worker) sortByDeadline(due []*timeout) {
	keys := w.sortScratch[:0]
	for _, t := range due {
		keys = append(keys, deadlineOf{t.deadline, t})
	}
	slices.SortFunc(keys, func(a, b deadlineOf) int { return cmp.Compare(a.deadline, b.deadline) })
	for i := range keys {
		due[i] = keys[i].timeout
		keys[i].timeout = nil
	}
	if cap(keys) <= maxKeptScratch {
		w.sortScratch = keys
	} else {
		w.sortScratch = nil // a storm's worth is not worth keeping
	}
}

// maxKeptScratch bounds the sort scratch space the worker keeps between
// ticks.
const maxKeptScratch = 1 << 14

// execute hands one batch to the executor. If the executor refuses it, or
// panics, the batch runs on a goroutine of its own: an expired task is
// never lost, and never run twice.
func (w *worker) execute(b *batch) {
	h := w.timer
	if err := safeExecute(h.executor, b.runFunc); err != nil {
		h.counters.executorFailures.Add(1)
		h.config.logger.Warn("hashedwheel: executor refused expired tasks; running them on a new goroutine",
			"tasks", len(b.timeouts), "error", err)
		if b.claimed.CompareAndSwap(false, true) {
			go b.runClaimed()
		}
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

// run runs the task, recovering and logging a panic.
func (t *timeout) run() {
	defer t.timer.logPanic("TimerTask", t)
	t.task.Run(t)
}

// logPanic, deferred, recovers a panic of what ran for t and logs it: a
// user's task or hook never takes the worker or a pool goroutine down.
func (h *HashedWheelTimer) logPanic(what string, t *timeout) {
	if r := recover(); r != nil {
		h.config.logger.Error("hashedwheel: "+what+" panicked", "timeout", t, "panic", r)
	}
}
