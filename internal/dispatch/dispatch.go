// Package dispatch hands a timer's due tasks to its executor and tracks
// them until they return. The hashedwheel timer and the benchmark
// contenders share it, so that they differ only in how they find what is
// due.
//
// Each Dispatch appends its tasks, as a segment, to a queue that drain
// functions on the executor take from, oldest first: a task due earlier
// never starts after one due later. A drain function claims more tasks at
// once while they are short (claim.go); what it claimed and has not
// started others steal, so a slow task holds up no other. At most
// Parallelism drain functions, the executor's size, are out at once;
// tasks beyond them wait in the queue, costing nothing.
//
// A Dispatch hands over twice as many drain functions as there are
// processors, enough for short tasks; those out go on with the segments
// that follow, so a backlog gains drain functions with each Dispatch. While slow tasks hold them, a check
// on a runtime timer asks in one step for a drain function for every slow
// task it expects, so that slow tasks due together start together.
// Nothing here waits on the executor's goroutines: Execute must not block.
package dispatch

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/histogram"
)

// Executor runs functions; pool.Executor satisfies it. Execute must not
// block: it queues the function or returns an error.
type Executor interface {
	Execute(task func()) error
}

// Config configures a Dispatcher.
type Config[T any] struct {
	// Executor runs the drain functions. Nil means inline: Dispatch runs
	// every task itself, in order, before it returns.
	Executor Executor
	// Run runs one task. It must recover its own panics.
	Run func(T)
	// Parallelism bounds the drain functions handed to the executor and
	// not returned: the executor's size. 0 means SizeOf(Executor).
	Parallelism int
	// Refused is told, from any goroutine, when the executor refuses a
	// drain function or panics in Execute; the function then runs on a
	// goroutine of its own, so that no task is lost.
	Refused func(err error)
	// Started and Finished, if set, are told of the tasks dispatched and
	// of those that returned, n at a time.
	Started, Finished func(n int)
	// Deadline and Now, if set, measure lateness (Lateness): Deadline
	// returns a task's deadline, and Now the time, in nanoseconds on the
	// caller's clock, which Dispatch reads once.
	Deadline func(T) int64
	Now      func() int64
}

// DefaultParallelism is the size of an executor that states none: of one
// without a Cap method, and of the pool a timer makes for itself.
const DefaultParallelism = 1024

// SizeOf returns how many tasks e runs at once: what its Cap method
// returns, if it has one and that is positive, else DefaultParallelism.
func SizeOf(e Executor) int {
	if c, ok := e.(interface{ Cap() int }); ok && c.Cap() > 0 {
		return c.Cap()
	}
	return DefaultParallelism
}

// maxKeptTasks and maxKeptSlices bound the slices kept for reuse.
const (
	maxKeptTasks  = 1 << 14
	maxKeptSlices = 2
)

// yieldEvery is how long a drain function runs tasks before it yields: a
// processor runs its due runtime timers, the worker's tick among them,
// only when it schedules (golang/go#38860).
const yieldEvery = 100 * time.Microsecond

// maxClaim bounds a claim, which doubles while its tasks took less than
// shortTask each on average.
const (
	maxClaim  = 64
	shortTask = 20 * time.Microsecond
)

// startDrainersPerCPU is how many drain functions per processor a Dispatch
// hands over.
const startDrainersPerCPU = 2

// growInterval is the period of the check.
const growInterval = 250 * time.Microsecond

// Dispatcher runs due tasks on an executor and tracks them until they
// return. Dispatch may be called from one goroutine at a time; the other
// methods are safe for concurrent use.
type Dispatcher[T any] struct {
	cfg      Config[T]
	inflight atomic.Int64 // tasks dispatched that have not returned
	waiting  atomic.Int64 // drain functions handed over that have not begun
	watching atomic.Bool  // the check is armed or running
	lateness lateness     // of the tasks started: the hand-over on Config.Now, the hand-off on the runtime's clock

	mu             sync.Mutex
	head, tail     *segment[T] // the queue: segments with tasks not yet started, oldest first
	outstanding    int         // drain functions handed over and not returned: at most Parallelism
	dispatched     int64       // tasks dispatched to the executor
	burstBase      int64       // tasks started when the queue last became non-empty
	startedAtCheck int64       // tasks started at the last check
	free           *handOff[T] // hand-offs not in use, linked
	spare          [][]T       // emptied task slices, for the next segments
	closed         bool
	idle           chan struct{} // closed once closed, no task in flight and no drain function out

	// The dispatching goroutine's: an inline dispatch, inline[inlineNext:]
	// yet to run, dispatched at inlineAt.
	inline         []T
	inlineNext     int
	inlineAt       int64
	inlineLateness localLateness
}

// segment is the tasks of one Dispatch.
type segment[T any] struct {
	tasks    []T
	at       int64                 // monotonic time of the Dispatch
	now      int64                 // Config.Now at the Dispatch
	next     atomic.Int64          // index of the first task not claimed
	claims   atomic.Pointer[claim] // every claim of more than one task, newest first
	finished atomic.Int64          // tasks that have returned
	link     *segment[T]           // the next segment in the queue; guarded by the dispatcher's mu
}

// unstarted returns how many tasks of the segment have not started.
func (s *segment[T]) unstarted() int64 {
	n := max(int64(len(s.tasks))-s.next.Load(), 0)
	for c := s.claims.Load(); c != nil; c = c.next {
		n += c.unstarted()
	}
	return n
}

// newClaim pushes a new claim on the segment's stack, for the thieves.
func (s *segment[T]) newClaim() *claim {
	c := new(claim)
	for {
		c.next = s.claims.Load()
		if s.claims.CompareAndSwap(c.next, c) {
			return c
		}
	}
}

// handOff is one drain function handed to the executor; armed, so that an
// executor running a function twice runs it once.
type handOff[T any] struct {
	d     *Dispatcher[T]
	armed atomic.Bool
	fn    func() // run, made once: a method value allocates
	link  *handOff[T]
}

// New returns a dispatcher configured by cfg.
func New[T any](cfg Config[T]) *Dispatcher[T] {
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = SizeOf(cfg.Executor)
	}
	if cfg.Refused == nil {
		cfg.Refused = func(error) {}
	}
	return &Dispatcher[T]{cfg: cfg, idle: make(chan struct{})}
}

// Dispatch runs tasks: inline, in order, before it returns; or on the
// executor, in order of their position, started together up to
// Parallelism at a time. It copies the tasks and clears the slice, which
// the caller may reuse at once.
func (d *Dispatcher[T]) Dispatch(tasks []T) {
	n := len(tasks)
	if n == 0 {
		return
	}
	d.inflight.Add(int64(n))
	if d.cfg.Started != nil {
		d.cfg.Started(n)
	}
	if d.cfg.Executor == nil {
		d.inline, d.inlineNext = tasks, 0
		if d.cfg.Now != nil {
			d.inlineAt = d.cfg.Now()
		}
		d.RunInline()
		return
	}
	s := &segment[T]{at: int64(time.Since(origin))}
	if d.cfg.Now != nil {
		s.now = d.cfg.Now()
	}
	d.mu.Lock()
	for i, spare := range d.spare { // a slice a segment emptied, if one is large enough
		if cap(spare) >= n {
			last := len(d.spare) - 1
			s.tasks, d.spare[i], d.spare[last] = spare, d.spare[last], nil
			d.spare = d.spare[:last]
			break
		}
	}
	d.mu.Unlock()
	s.tasks = append(s.tasks, tasks...)
	clear(tasks)

	d.mu.Lock()
	if d.head == nil {
		d.head, d.burstBase = s, d.dispatched
	} else {
		d.tail.link = s
	}
	d.tail = s
	d.dispatched += int64(n)
	k := min(n, startDrainersPerCPU*runtime.GOMAXPROCS(0))
	h := d.takeHandOffs(k)
	d.mu.Unlock()
	d.handOut(h)
	if n > k { // tasks wait behind the drain functions out, which slow tasks may hold
		d.watch()
	}
}

// RunInline runs, in order, the tasks of an inline dispatch that have not
// run yet: Dispatch calls it, and so must the goroutine that takes over
// from a dispatching goroutine that a task ended with runtime.Goexit.
func (d *Dispatcher[T]) RunInline() {
	ran := 0
	defer func() { // a task that calls runtime.Goexit has finished too
		d.inlineLateness.mergeInto(&d.lateness)
		d.finish(int64(ran))
	}()
	for d.inlineNext < len(d.inline) {
		i := d.inlineNext
		d.inlineNext++
		ran++
		t := d.inline[i]
		var zero T
		d.inline[i] = zero
		if d.cfg.Deadline != nil { // each waits for those before it, on the caller's clock
			d.inlineLateness.add(d.inlineAt-d.cfg.Deadline(t), d.cfg.Now()-d.inlineAt)
		}
		d.cfg.Run(t)
	}
	d.inline, d.inlineNext = nil, 0
}

// takeHandOffs counts up to n more drain functions out, as many as the
// bound allows, and returns their hand-offs, linked. The caller holds mu.
func (d *Dispatcher[T]) takeHandOffs(n int) *handOff[T] {
	n = min(n, d.cfg.Parallelism-d.outstanding)
	if n <= 0 {
		return nil
	}
	d.outstanding += n
	d.waiting.Add(int64(n))
	var first *handOff[T]
	for range n {
		h := d.free
		if h == nil {
			h = &handOff[T]{d: d}
			h.fn = h.run
		} else {
			d.free = h.link
		}
		h.link, first = first, h
	}
	return first
}

// handOut hands the executor the drain functions of the hand-offs linked
// from h. One the executor refuses, or panics on, runs on a goroutine of
// its own.
func (d *Dispatcher[T]) handOut(h *handOff[T]) {
	for h != nil {
		rest := h.link // before the hand-over: a drain function that has run gives h back, relinked
		h.link = nil
		h.armed.Store(true)
		if err := d.execute(h, rest); err != nil {
			d.cfg.Refused(err)
			go h.fn()
		}
		h = rest
	}
}

// execute hands h's drain function to the executor and returns its error,
// or a panic in Execute as one. An Execute that ends the calling goroutine
// with runtime.Goexit leaves the function, and the hand-offs linked from
// rest, to goroutines of their own: every hand-off counted out is handed
// over.
func (d *Dispatcher[T]) execute(h, rest *handOff[T]) (err error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			err = fmt.Errorf("executor panicked: %v", r)
			return
		}
		go h.fn()
		go d.handOut(rest)
	}()
	err = d.cfg.Executor.Execute(h.fn)
	returned = true
	return err
}

// run is the drain function of a hand-off: it runs the queue's tasks,
// oldest first, until none is left to start, then gives the hand-off back.
// A task that calls runtime.Goexit ends it: a goroutine of its own carries
// on, holding the hand-off, so that the executor is handed no drain
// function before the ending one has returned to it.
func (h *handOff[T]) run() {
	if !h.armed.CompareAndSwap(true, false) {
		return // a second run of one hand-over
	}
	d := h.d
	d.waiting.Add(-1)
	r := drainer[T]{d: d}
	defer func() {
		r.finishSegment()
		if !r.returned {
			d.waiting.Add(1)
			h.armed.Store(true)
			go h.fn()
		}
	}()
	r.now = int64(time.Since(origin)) // the runtime's monotonic clock, whatever the caller's
	r.yielded = r.now
	for r.s = d.nextSegment(nil, h); r.s != nil; r.s = d.nextSegment(r.s, h) {
		r.claimAndRun()
		r.steal()
		r.finishSegment()
	}
	r.returned = true
}

// claimAndRun runs the tasks it claims from the segment's cursor until
// none is left: one at a time while tasks take long, twice as many each
// time while they are short, so that a storm of short tasks pays no shared
// atomic add and no clock reading each. It yields every yieldEvery.
func (r *drainer[T]) claimAndRun() {
	d, s := r.d, r.s
	n := int64(len(s.tasks))
	r.own = nil
	for k := int64(1); ; {
		if r.now-r.yielded >= int64(yieldEvery) {
			runtime.Gosched()
			r.now = int64(time.Since(origin))
			r.yielded = r.now
		}
		if k > 1 {
			if r.own == nil {
				r.own = s.newClaim()
			}
			r.own.word.Store(claiming) // before the cursor moves: a thief waits for the range
		}
		first := s.next.Add(k) - k
		if first >= n {
			if r.own != nil {
				r.own.set(0, 0)
			}
			return
		}
		last := min(first+k, n)
		if k > 1 {
			r.own.set(first+1, last)
		}
		if !r.claimed && last < n { // tasks wait behind this drain function's first claim
			r.claimed = true
			if d.waiting.Load() == 0 { // the last drain function out has begun: watch the rest
				d.watch()
			}
		}
		began, ran := r.now, r.ran
		r.runTask(first)
		for i, ok := r.own.take(k); ok; i, ok = r.own.take(k) {
			r.runTask(i)
		}
		r.now = int64(time.Since(origin))
		if r.now-began < int64(shortTask)*(r.ran-ran) {
			k = min(2*k, maxClaim)
		} else {
			k = 1
		}
	}
}

// steal runs, one at a time, the tasks that other drain functions claimed
// and have not started, until none is left.
func (r *drainer[T]) steal() {
	for c := r.s.claims.Load(); c != nil; c = c.next {
		for i, ok := c.steal(); ok; i, ok = c.steal() {
			r.now = int64(time.Since(origin))
			r.runTask(i)
		}
	}
	r.now = int64(time.Since(origin))
}

// runTask runs task i of the segment, which this drain function alone has
// started, its hand-off wait read at its claim: to within a claim of tasks
// shorter than shortTask.
func (r *drainer[T]) runTask(i int64) {
	s := r.s
	t := s.tasks[i]
	var zero T
	s.tasks[i] = zero // nothing a finished task captured stays reachable
	if r.d.cfg.Deadline != nil {
		r.lateness.add(s.now-r.d.cfg.Deadline(t), r.now-s.at)
	}
	r.ran++ // counted first: a task that calls runtime.Goexit has finished too
	r.d.cfg.Run(t)
}

// drainer is the state of one drain function's run.
type drainer[T any] struct {
	d        *Dispatcher[T]
	s        *segment[T]   // the segment it takes tasks from
	own      *claim        // its claim of several of s's tasks, made at the first
	ran      int64         // tasks of s it started: counted finished with the segment
	claimed  bool          // it has armed the watch, or found it needless
	now      int64         // the clock at its last claim, on the runtime's monotonic clock since origin
	yielded  int64         // when it last yielded its processor
	lateness localLateness // of the tasks it started, merged with each segment
	returned bool          // run returned: no task called runtime.Goexit
}

// finishSegment counts the tasks of the segment the drain function ran,
// which have returned, and publishes their waits.
func (r *drainer[T]) finishSegment() {
	if r.ran == 0 {
		return
	}
	d, s, ran := r.d, r.s, r.ran
	r.ran = 0
	r.lateness.mergeInto(&d.lateness)
	// The drain function that counts the last task recycles the slice:
	// every task has been handed out, so no drain function reads it again.
	if s.finished.Add(ran) == int64(len(s.tasks)) {
		d.mu.Lock()
		d.recycle(s.tasks)
		d.mu.Unlock()
	}
	d.finish(ran)
}

// nextSegment returns the segment the drain function of h takes tasks from
// after prev, which it found exhausted (nil at first): the queue's oldest.
// With the queue empty, it gives h back and returns nil.
func (d *Dispatcher[T]) nextSegment(prev *segment[T], h *handOff[T]) *segment[T] {
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev != nil && d.head == prev {
		d.head, prev.link = prev.link, nil
		if d.head == nil {
			d.tail = nil
		}
	}
	if d.head != nil {
		return d.head
	}
	d.outstanding--
	h.link, d.free = d.free, h
	d.signalIdleIfDone()
	return nil
}

// watch arms the check, unless it is armed, no task waits or the bound is
// reached. The caller is a Dispatch whose tasks outnumber the drain
// functions it handed over, or a drain function that has just claimed its
// first tasks with others waiting, no drain function waiting to begin: the
// check stops while one waits.
func (d *Dispatcher[T]) watch() {
	if !d.watching.CompareAndSwap(false, true) {
		return
	}
	d.mu.Lock()
	unstarted := d.unstarted()
	if unstarted == 0 || d.outstanding >= d.cfg.Parallelism {
		d.watching.Store(false)
		d.mu.Unlock()
		return
	}
	d.startedAtCheck = d.dispatched - unstarted
	d.mu.Unlock()
	time.AfterFunc(growInterval, d.grow)
}

// mayGrow reports whether more drain functions could start tasks: some
// wait, the bound is not reached, and no drain function waits to begin,
// which the executor or a processor holds up. The caller holds mu.
func (d *Dispatcher[T]) mayGrow(unstarted int64) bool {
	return unstarted > 0 && d.outstanding < d.cfg.Parallelism && d.waiting.Load() == 0
}

// grow is the check: if no more tasks started since the last check than
// there are drain functions out, they are held by slow tasks, and it hands
// over, in one step, a drain function for each slow task it expects among
// those waiting, at the rate seen since the queue filled, and as many
// again for the short ones. Then it arms the next check, while growing can
// still help; drain functions it handed over arm it as they begin.
func (d *Dispatcher[T]) grow() {
	d.mu.Lock()
	unstarted := d.unstarted()
	started := d.dispatched - unstarted
	var h *handOff[T]
	if d.mayGrow(unstarted) && started-d.startedAtCheck <= int64(d.outstanding) {
		out, burst := int64(d.outstanding), max(started-d.burstBase, 1)
		h = d.takeHandOffs(int(min((out*unstarted+burst-1)/burst+out, unstarted)))
	}
	d.startedAtCheck = started
	rearm := h == nil && d.mayGrow(unstarted)
	if !rearm {
		d.watching.Store(false)
	}
	d.mu.Unlock()
	d.handOut(h)
	if rearm {
		time.AfterFunc(growInterval, d.grow)
	}
}

// unstarted returns how many dispatched tasks have not started. The
// caller holds mu.
func (d *Dispatcher[T]) unstarted() int64 {
	var n int64
	for s := d.head; s != nil; s = s.link {
		n += s.unstarted()
	}
	return n
}

// recycle keeps an emptied slice for reuse. The caller holds mu.
func (d *Dispatcher[T]) recycle(s []T) {
	if cap(s) <= maxKeptTasks && len(d.spare) < maxKeptSlices {
		d.spare = append(d.spare, s[:0])
	}
}

// Lateness returns, for the tasks started so far, how late each started
// after its deadline (Config.Deadline), and the two parts of it: how late
// its Dispatch was (Config.Now then), and how long it then waited to
// start. A task's counts are merged, a segment at a time, once it has
// returned. All are empty without Config.Deadline.
func (d *Dispatcher[T]) Lateness() (late, handOver, handOff histogram.Snapshot) {
	l := &d.lateness
	return l.total.Snapshot(), l.handOver.Snapshot(), l.handOff.Snapshot()
}

// lateness is how late tasks started after their deadlines (total), and
// its two parts: the hand-over, from the deadline to the task's Dispatch,
// and the hand-off, from the Dispatch to the task's start.
type lateness struct {
	total, handOver, handOff histogram.Shared
}

// localLateness is the lateness of the tasks one goroutine started, which
// it merges into the dispatcher's.
type localLateness struct {
	total, handOver, handOff histogram.Local
}

// add counts a task handed over over ns after its deadline that then
// waited wait ns to start.
func (l *localLateness) add(over, wait int64) {
	l.handOver.Add(over, 1)
	l.handOff.Add(wait, 1)
	l.total.Add(over+wait, 1)
}

// mergeInto adds l's counts into sh and empties l.
func (l *localLateness) mergeInto(sh *lateness) {
	l.total.MergeInto(&sh.total)
	l.handOver.MergeInto(&sh.handOver)
	l.handOff.MergeInto(&sh.handOff)
}

// Close tells the dispatcher that nothing more will be dispatched; Idle
// closes once every dispatched task has returned and every drain function
// handed to the executor has given its hand-off back.
func (d *Dispatcher[T]) Close() {
	d.mu.Lock()
	d.closed = true
	d.signalIdleIfDone()
	d.mu.Unlock()
}

// Idle returns a channel that is closed once Close has been called, every
// dispatched task has returned and no drain function is out: after it, the
// dispatcher calls Execute no more, so the executor may be released.
func (d *Dispatcher[T]) Idle() <-chan struct{} { return d.idle }

// finish counts n tasks that returned.
func (d *Dispatcher[T]) finish(n int64) {
	if d.cfg.Finished != nil {
		d.cfg.Finished(int(n))
	}
	if d.inflight.Add(-n) == 0 {
		d.mu.Lock()
		d.signalIdleIfDone()
		d.mu.Unlock()
	}
}

// signalIdleIfDone closes idle if the dispatcher is closed, no task is in
// flight and no drain function is out. The caller holds mu; the last
// finish, the last give-back and Close each call it under mu, so whichever
// comes last sees the others.
func (d *Dispatcher[T]) signalIdleIfDone() {
	if d.closed && d.outstanding == 0 && d.inflight.Load() == 0 {
		select {
		case <-d.idle:
		default:
			close(d.idle)
		}
	}
}

// InTask reports whether the caller runs on a drain function of any
// dispatcher: in a task handed to an executor. It walks the caller's
// stack, so it is for rare calls, such as a Stop that must not wait for
// its own caller, and costs the tasks nothing.
func InTask() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if isDrain(f.Function) {
			return true
		}
		if !more {
			return false
		}
	}
}

// isDrain reports whether function, a frame's, is a drain function,
// handOff.run, of any instantiation.
func isDrain(function string) bool {
	const prefix, suffix = "github.com/wheeltimer/wheeltimer/internal/dispatch.(*handOff[", "]).run"
	return strings.HasPrefix(function, prefix) && strings.HasSuffix(function, suffix)
}

// origin is the reference of the dispatcher's readings of the runtime's
// monotonic clock, by which it measures hand-off waits and yields.
var origin = time.Now()
