// Package dispatch hands a timer's due tasks to its executor and tracks
// them until they return; the hashedwheel timer and the benchmark
// contenders share it.
//
// Each Dispatch appends its tasks, as a segment, to a queue that at most
// Parallelism drain functions on the executor take from, oldest first: a
// task due earlier never starts after one due later, and what one drain
// function claimed and has not started others steal (claim.go), so a slow
// task holds up no other. While slow tasks hold the drain functions out, a
// check asks for more (grow), so slow tasks due together start together.
// Nothing waits for the executor's goroutines: Execute must not block.
package dispatch

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
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
	// returned, n at a time.
	Started, Finished func(n int)
	// Now, if set, measures lateness (Lateness): it returns the time in
	// nanoseconds on the clock of the tasks' deadlines. Dispatch reads it
	// once, and an inline run before each task.
	Now func() int64
}

// Due is a task and its deadline, in nanoseconds on Config.Now's clock.
type Due[T any] struct {
	Deadline int64
	Task     T
}

// DefaultParallelism is the size of an executor that states none (no Cap
// method) and of the pool a timer makes for itself.
const DefaultParallelism = 1024

// SizeOf returns how many tasks e runs at once: what its Cap method
// returns, if it has one and that is positive, else DefaultParallelism.
func SizeOf(e Executor) int {
	if c, ok := e.(interface{ Cap() int }); ok && c.Cap() > 0 {
		return c.Cap()
	}
	return DefaultParallelism
}

const (
	// MaxKeptTasks bounds each slice kept for reuse, maxSpares their
	// number: a storm's segments take the slices of those finished
	// instead of allocating, an allocation the collector, marking, makes
	// the dispatching goroutine pay for by assisting it.
	MaxKeptTasks = 1 << 14
	maxSpares    = 8
	spareLinger  = time.Second
	// yieldEvery is how long a drain function runs tasks before it yields:
	// a processor runs its due runtime timers, the worker's tick among
	// them, only when it schedules (golang/go#38860).
	yieldEvery = 100 * time.Microsecond
	// A claim doubles, up to maxClaim, while its tasks took less than
	// shortTask each on average.
	maxClaim  = 64
	shortTask = 20 * time.Microsecond
	// startDrainersPerCPU is how many drain functions per processor a
	// Dispatch or check hands over.
	startDrainersPerCPU = 2
	// growInterval is the period of the check; slowAfter, how long the
	// first check waits for a claim's tasks to return before it takes them
	// for slow; fanOutBy, how many of the drain functions the check asked
	// for each one begun hands out.
	growInterval = 250 * time.Microsecond
	slowAfter    = 50 * time.Microsecond
	fanOutBy     = 2
)

// Dispatcher runs due tasks on an executor and tracks them until they
// return. Dispatch may be called from one goroutine at a time; the other
// methods are safe for concurrent use.
type Dispatcher[T any] struct {
	cfg      Config[T]
	inflight atomic.Int64 // tasks dispatched that have not returned
	waiting  atomic.Int64 // drain functions handed over that have not begun
	progress atomic.Int64 // claims whose tasks have returned
	fanOut   atomic.Int64 // drain functions the check asked for, for those begun to hand out
	watching atomic.Bool  // the check is armed or running
	lateness lateness     // of started tasks: hand-over on Config.Now, hand-off on the runtime's clock

	mu             sync.Mutex
	head, tail     *segment[T] // the queue: segments with tasks not yet started, oldest first
	outstanding    int         // drain functions handed over and not returned: at most Parallelism
	dispatched     int64       // tasks dispatched to the executor
	burstBase      int64       // tasks started when the queue last became non-empty
	startedAtCheck int64       // tasks started at the last check
	free           *handOff[T] // hand-offs not in use, linked
	spares         [][]Due[T]  // emptied task slices, for the next segments
	queuedBehindAt int64       // Config.Now when a segment last queued behind another
	closed         bool
	idle           chan struct{} // closed once closed, no task in flight and no drain function out

	// The dispatching goroutine's inline run of an inline dispatch's
	// segment, on Config.Now's clock.
	inline        drainer[T]
	inlineSegment segment[T]
}

// segment is the tasks of one Dispatch.
type segment[T any] struct {
	tasks    []Due[T]
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

// handOff is a drain function handed to the executor, armed so that
// running it twice runs it once.
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
	d := &Dispatcher[T]{cfg: cfg, idle: make(chan struct{})}
	d.inline.d = d
	return d
}

// Dispatch runs tasks: inline, in order, before it returns; or on the
// executor, in order, started together up to Parallelism at a time. It
// copies and clears tasks; the caller may reuse the slice.
func (d *Dispatcher[T]) Dispatch(tasks []Due[T]) {
	n := len(tasks)
	if n == 0 {
		return
	}
	d.inflight.Add(int64(n))
	if d.cfg.Started != nil {
		d.cfg.Started(n)
	}
	var now int64
	if d.cfg.Now != nil {
		now = d.cfg.Now()
	}
	if d.cfg.Executor == nil {
		s := &d.inlineSegment // each waits for those before it, on the caller's clock
		s.tasks, s.now, s.at = tasks, now, now
		s.next.Store(0)
		d.inline.s = s
		d.RunInline()
		return
	}
	s := &segment[T]{at: int64(time.Since(origin)), now: now}
	d.mu.Lock()
	best := -1 // the smallest slice a segment emptied that holds the runs
	for i, spare := range d.spares {
		if cap(spare) >= n && (best < 0 || cap(spare) < cap(d.spares[best])) {
			best = i
		}
	}
	if best >= 0 {
		s.tasks = d.spares[best]
		d.spares = slices.Delete(d.spares, best, best+1)
	}
	d.mu.Unlock()
	s.tasks = append(s.tasks, tasks...)
	clear(tasks)
	d.mu.Lock()
	if d.head == nil {
		d.head, d.burstBase = s, d.dispatched
	} else {
		d.tail.link, d.queuedBehindAt = s, now
	}
	d.tail = s
	d.dispatched += int64(n)
	d.mu.Unlock()
	k := min(n, startDrainersPerCPU*runtime.GOMAXPROCS(0))
	d.handOut(k)
	if n > k { // tasks wait behind the drain functions out, which slow tasks may hold
		d.watch()
	}
}

// RunInline runs, in order, the tasks of an inline dispatch not yet run:
// Dispatch calls it, and so must the goroutine that takes over from a
// dispatching goroutine a task ended with runtime.Goexit.
func (d *Dispatcher[T]) RunInline() {
	r := &d.inline
	defer func() { // a task that calls runtime.Goexit has finished too
		r.lateness.mergeInto(&d.lateness)
		d.finish(r.ran)
		r.ran = 0
	}()
	for s := r.s; s != nil && s.next.Load() < int64(len(s.tasks)); {
		if d.cfg.Now != nil {
			r.now = d.cfg.Now()
		}
		r.runTask(s.next.Add(1) - 1)
	}
	r.s, d.inlineSegment.tasks = nil, nil // the caller's slice: the dispatcher keeps nothing of it
}

// handOut counts up to n more drain functions out, within the bound, and
// hands each to the executor, or, refused or after an Execute that
// panicked or called runtime.Goexit, to a goroutine of its own.
func (d *Dispatcher[T]) handOut(n int) {
	d.mu.Lock()
	n = max(min(n, d.cfg.Parallelism-d.outstanding), 0)
	d.outstanding += n
	d.waiting.Add(int64(n))
	var rest *handOff[T] // those not yet handed over, linked
	for range n {
		h := d.free
		if h == nil {
			h = &handOff[T]{d: d}
			h.fn = h.run
		} else {
			d.free = h.link
		}
		h.link, rest = rest, h
	}
	d.mu.Unlock()
	var h *handOff[T]
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			d.cfg.Refused(fmt.Errorf("executor panicked: %v", r))
		}
		go h.fn() // armed: if Execute ran it already, a second run returns at once
		for h = rest; h != nil; h = rest {
			rest, h.link = h.link, nil
			h.armed.Store(true)
			go h.fn()
		}
	}()
	for h = rest; h != nil; h = rest {
		// Unlinked, then armed, just before its hand-over: from then on a
		// late second run of an earlier one may run it, and relink it.
		rest, h.link = h.link, nil
		h.armed.Store(true)
		if err := d.cfg.Executor.Execute(h.fn); err != nil {
			d.cfg.Refused(err)
			go h.fn()
		}
	}
	returned = true
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
	for {
		// Take the oldest segment past the exhausted one; with none, give
		// the hand-off back.
		d.mu.Lock()
		if prev := r.s; prev != nil && d.head == prev {
			d.head, prev.link = prev.link, nil
			if d.head == nil {
				d.tail = nil
			}
		}
		if r.s = d.head; r.s == nil {
			d.outstanding--
			h.link, d.free = d.free, h
			d.signalIdleIfDone()
			d.mu.Unlock()
			break
		}
		d.mu.Unlock()
		r.claimAndRun()
		r.steal()
		r.finishSegment()
	}
	r.returned = true
}

// drainer is the state of one drain function's run.
type drainer[T any] struct {
	d        *Dispatcher[T]
	s        *segment[T]   // the segment it takes tasks from
	own      *claim        // its claim of several of s's tasks, made at the first
	ran      int64         // tasks of s it started: counted finished with the segment
	claimed  bool          // it has made its first claim with tasks waiting behind
	now      int64         // the clock at its last claim, on the runtime's monotonic clock since origin
	yielded  int64         // when it last yielded its processor
	lateness localLateness // of the tasks it started, merged with each segment
	returned bool          // run returned: no task called runtime.Goexit
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
		if !r.claimed && last < n { // tasks wait behind its first claim
			r.claimed = true
			// Hand out fanOutBy of those the check asked for (fanOut, below
			// zero once taken), so that they start in a tree; with none
			// left and none out waiting to begin, watch the rest.
			if m := min(d.fanOut.Add(-fanOutBy)+fanOutBy, fanOutBy); m > 0 {
				d.handOut(int(m))
			} else if d.waiting.Load() == 0 {
				d.watch()
			}
		}
		began, ran := r.now, r.ran
		r.runTask(first)
		for i, ok := r.own.take(k); ok; i, ok = r.own.take(k) {
			r.runTask(i)
		}
		d.progress.Add(1)
		r.now = int64(time.Since(origin))
		if r.now-began < int64(shortTask)*(r.ran-ran) {
			k = min(2*k, maxClaim)
		} else {
			k = 1
		}
	}
}

// steal runs one by one the tasks other drain functions claimed and have
// not started.
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
	s.tasks[i] = Due[T]{} // nothing a finished task captured stays reachable
	if r.d.cfg.Now != nil {
		over, wait := s.now-t.Deadline, r.now-s.at
		l := &r.lateness
		l.handOver.Add(over, 1)
		l.handOff.Add(wait, 1)
		l.total.Add(over+wait, 1)
	}
	r.ran++ // counted first: a task that calls runtime.Goexit has finished too
	r.d.cfg.Run(t.Task)
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
		d.keepSpare(s.tasks[:0])
		d.mu.Unlock()
	}
	d.finish(ran)
}

// keepSpare keeps an emptied slice of at most MaxKeptTasks, in place of
// the smallest spare once maxSpares are kept, so that small dispatches do
// not crowd out a storm's. d.mu must be held.
func (d *Dispatcher[T]) keepSpare(tasks []Due[T]) {
	if cap(tasks) > MaxKeptTasks {
		return
	}
	if len(d.spares) < maxSpares {
		d.spares = append(d.spares, tasks)
		return
	}
	smallest := 0
	for i, spare := range d.spares {
		if cap(spare) < cap(d.spares[smallest]) {
			smallest = i
		}
	}
	if cap(tasks) > cap(d.spares[smallest]) {
		d.spares[smallest] = tasks
	}
}

// TrimSpares drops the emptied slices kept but the largest once no segment
// has queued behind another for spareLinger before now, on Config.Now's
// clock: a storm keeps them while it lasts and leaves at most one slice of
// MaxKeptTasks behind.
func (d *Dispatcher[T]) TrimSpares(now int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.spares) < 2 || now-d.queuedBehindAt < int64(spareLinger) {
		return
	}
	largest := slices.MaxFunc(d.spares, func(a, b []Due[T]) int { return cmp.Compare(cap(a), cap(b)) })
	clear(d.spares)
	d.spares = append(d.spares[:0], largest)
}

// watch arms the check unless it is armed, no task waits or the bound is
// reached. Its caller is a Dispatch whose tasks outnumber the drain
// functions it handed over, or a drain function that has just claimed its
// first tasks with others waiting and no drain function waiting to begin:
// the check stops while one waits.
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
	go d.firstCheck()
}

// firstCheck makes the first check as soon as it can tell: it yields until
// every drain function out has begun, then for slowAfter more; if no
// claim's tasks returned meanwhile, slow tasks hold them and it grows at
// once (a runtime timer fires up to a millisecond late on an idle machine).
// Otherwise, after growInterval, or at once where time stands still while
// goroutines run (a testing/synctest bubble), the checks go on a timer.
func (d *Dispatcher[T]) firstCheck() {
	start := time.Since(origin)
	var began time.Duration // when every drain function out had begun
	var progress int64
	for now, last := start, start; ; last = now {
		runtime.Gosched()
		now = time.Since(origin)
		switch {
		case now == last, now-start >= growInterval:
		case d.waiting.Load() > 0:
			began = 0
			continue
		case began == 0:
			began, progress = now, d.progress.Load()
			continue
		case d.progress.Load() != progress: // the tasks are short
		case now-began < slowAfter:
			continue
		default:
			d.grow()
			return
		}
		time.AfterFunc(growInterval, d.grow)
		return
	}
}

// grow is the check: if no more tasks started since the last check than
// drain functions are out, slow tasks hold them: it asks for one per slow
// task it expects among those waiting, at the rate seen since the queue
// filled, plus as many for the short ones. Else, while growing can help,
// it arms the next check; those it asked for arm it as they begin.
func (d *Dispatcher[T]) grow() {
	d.mu.Lock()
	unstarted := d.unstarted()
	started := d.dispatched - unstarted
	// More drain functions could start tasks: some wait, the bound is not
	// reached, and none waits to begin (on the executor or a processor).
	mayGrow := unstarted > 0 && d.outstanding < d.cfg.Parallelism && d.waiting.Load() == 0
	n := 0
	if mayGrow && started-d.startedAtCheck <= int64(d.outstanding) {
		out, burst := int64(d.outstanding), max(started-d.burstBase, 1)
		n = int(min((out*unstarted+burst-1)/burst+out, unstarted))
	}
	d.startedAtCheck = started
	rearm := n == 0 && mayGrow
	if !rearm {
		d.watching.Store(false)
	}
	d.mu.Unlock()
	first := min(n, startDrainersPerCPU*runtime.GOMAXPROCS(0))
	d.fanOut.Store(int64(n - first)) // those begun hand out the rest
	d.handOut(first)
	if rearm {
		time.AfterFunc(growInterval, d.grow)
	}
}

// unstarted returns how many dispatched tasks have not started. The caller
// holds mu.
func (d *Dispatcher[T]) unstarted() int64 {
	var n int64
	for s := d.head; s != nil; s = s.link {
		n += s.unstarted()
	}
	return n
}

// Lateness returns how late each task started so far began after its
// deadline, and the two parts: how late its Dispatch was (Config.Now then)
// and how long it then waited to start. A task's counts are merged a
// segment at a time, once it has returned; all are empty without
// Config.Now.
func (d *Dispatcher[T]) Lateness() (late, handOver, handOff histogram.Snapshot) {
	l := &d.lateness
	return l.total.Snapshot(), l.handOver.Snapshot(), l.handOff.Snapshot()
}

// lateness is how late tasks started after their deadlines (total), in two
// parts: the hand-over, from deadline to Dispatch, and the hand-off, from
// Dispatch to start.
type lateness struct{ total, handOver, handOff histogram.Shared }

// localLateness is the lateness of the tasks one goroutine started, merged
// into the dispatcher's.
type localLateness struct{ total, handOver, handOff histogram.Local }

// mergeInto adds l's counts into sh and empties l.
func (l *localLateness) mergeInto(sh *lateness) {
	l.total.MergeInto(&sh.total)
	l.handOver.MergeInto(&sh.handOver)
	l.handOff.MergeInto(&sh.handOff)
}

// Close tells the dispatcher that nothing more will be dispatched; Idle
// closes once every dispatched task has returned and every drain function
// out has given its hand-off back.
func (d *Dispatcher[T]) Close() {
	d.mu.Lock()
	d.closed = true
	d.signalIdleIfDone()
	d.mu.Unlock()
}

// Idle returns a channel closed once Close was called, every dispatched
// task returned and no drain function is out; Execute is then never called
// again, so the executor may be released.
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
// dispatcher (handOff.run of any instantiation): in a task handed to an
// executor. It walks the caller's stack, so it is for rare calls, such as
// a Stop that must not wait for its own caller, and costs the tasks
// nothing.
func InTask() bool {
	const prefix, suffix = "github.com/wheeltimer/wheeltimer/internal/dispatch.(*handOff[", "]).run"
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	for n == len(pcs) {
		pcs = make([]uintptr, 2*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, prefix) && strings.HasSuffix(f.Function, suffix) {
			return true
		}
		if !more {
			return false
		}
	}
}

// origin is the zero of the runtime monotonic clock readings that time
// hand-off waits and yields.
var origin = time.Now()
