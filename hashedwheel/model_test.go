package hashedwheel

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/histogram"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Model-based testing: a reference model, a plain list of timeouts with
// their deadlines, is driven beside a real timer on a fake clock by random
// sequences of NewTimeout, AfterFunc, NewTimeouts, Cancel, clock advances
// and Stop. Some steps issue several NewTimeout and Cancel calls from
// concurrent goroutines and join them before the clock moves. After every step the
// timeouts that fired, the cancellations that were processed, each
// handle's state, PendingTimeouts and Stats must match the model exactly.
//
// The firing rule the model encodes, read from wheel.go and worker.go:
// times are counted from the timer's start (its first clock reading); tick
// k covers (k·tick, (k+1)·tick] and is processed once the clock reaches
// (k+1)·tick, its end. A timeout made at time c with delay δ has deadline
// d = c+δ (clamped to math.MaxInt64 if that overflows) and fires when tick
// max(⌈d/tick⌉−1, ⌊c/tick⌋) is processed: at the first tick end at or
// after its deadline and strictly after its creation. A deadline that
// falls exactly on a tick end k·tick therefore fires at k·tick, as a
// runtime timer fires at its deadline (Netty fires it a tick later). When
// the clock jumps over several ticks at once, the worker processes them
// back to back at the new instant. A successful Cancel drops the pending
// count as it returns; it is processed (the Cancelled hook runs) at the
// latest when the tick in progress at the time of the call is processed, sooner if the
// worker sleeps past that tick, or by Stop. With pool.Inline the tasks of
// one tick run in deadline order, ticks in order.
//
// Beyond that rule the model checks: Cancel returns true exactly once per
// timeout that neither fired nor was cancelled, also when several
// goroutines cancel it at once, and when they race with the end of the
// tick in which it is due (then it either is cancelled and never runs, or
// runs and every Cancel fails); with a pending limit L, exactly
// min(k, L−pending) of k concurrent NewTimeout calls succeed; Deadline()
// is the start plus the clamped deadline; a nil task is refused; Stop
// returns exactly the timeouts that neither fired nor were cancelled, a
// second Stop nil, and NewTimeout after it ErrStopped; Stats agrees.

var (
	modelSeedFlag = flag.Uint64("model.seed", 0, "replay the model-based sequence with this seed, logging each step")
	modelSeqsFlag = flag.Int("model.seqs", 0, "number of random sequences TestModel runs (0: the default)")
)

// modelDefaultSeqs is the number of sequences TestModel runs: 5 to 10 s
// under -race on a loaded 2-core machine.
const (
	modelDefaultSeqs = 5000
	modelMaxOps      = 50
)

// TestModel runs thousands of random operation sequences against the model.
// A failure prints the seed; go test -run '^TestModel$' -model.seed=N
// replays that sequence with a log of every step.
func TestModel(t *testing.T) {
	if *modelSeedFlag != 0 {
		var trace modelTrace
		trace.verbose = func(s string) { t.Log(s) }
		if err := modelRun(modelNewRandSource(*modelSeedFlag), modelMaxOps, &trace); err != nil {
			t.Fatalf("seed %d: %v", *modelSeedFlag, err)
		}
		return
	}
	seqs := modelDefaultSeqs
	if *modelSeqsFlag > 0 {
		seqs = *modelSeqsFlag
	}
	if testing.Short() {
		seqs /= 10
	}
	base := rand.Uint64() | 1
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := next.Add(1) - 1
				if i >= int64(seqs) {
					return
				}
				seed := base + uint64(i)
				var trace modelTrace
				if err := modelRun(modelNewRandSource(seed), modelMaxOps, &trace); err != nil {
					if failed.CompareAndSwap(false, true) {
						t.Errorf("sequence %d failed: %v\nlast steps:\n%s\nreplay: go test -race -run '^TestModel$' -v ./hashedwheel -model.seed=%d",
							i, err, trace.tail(25), seed)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	if !failed.Load() {
		t.Logf("%d sequences passed (seeds %d to %d)", seqs, base, base+uint64(seqs)-1)
	}
}

// modelSource supplies the random choices of a sequence: a seeded PRNG for
// TestModel, the fuzzer's bytes for FuzzModelOps.
type modelSource interface {
	// intn returns a value in [0, n); n > 0.
	intn(n int) int
	// int64n returns a value in [0, n); n > 0.
	int64n(n int64) int64
	// exhausted reports that the source has run dry: the sequence ends.
	exhausted() bool
}

type modelRandSource struct{ r *rand.Rand }

func modelNewRandSource(seed uint64) *modelRandSource {
	return &modelRandSource{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (s *modelRandSource) intn(n int) int          { return s.r.IntN(n) }
func (s *modelRandSource) int64n(n int64) int64    { return s.r.Int64N(n) }
func (s *modelRandSource) exhausted() bool         { return false }
func (s *modelByteSource) exhausted() bool         { return s.done }
func (s *modelByteSource) intn(n int) int          { return int(s.int64n(int64(n))) }
func modelNewByteSource(b []byte) *modelByteSource { return &modelByteSource{data: b} }

// modelByteSource reads choices from fuzzer input; once it is used up every
// choice is 0 and the sequence ends.
type modelByteSource struct {
	data []byte
	done bool
}

func (s *modelByteSource) int64n(n int64) int64 {
	var v uint64
	for k := 0; k < 8 && (k == 0 || uint64(n)>>(8*k) != 0); k++ {
		if len(s.data) == 0 {
			s.done = true
			break
		}
		v = v<<8 | uint64(s.data[0])
		s.data = s.data[1:]
	}
	return int64(v % uint64(n))
}

// modelTrace records the steps of a sequence, to print on failure.
type modelTrace struct {
	lines   []string
	verbose func(string)
}

func (tr *modelTrace) add(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	tr.lines = append(tr.lines, s)
	if tr.verbose != nil {
		tr.verbose(s)
	}
}

func (tr *modelTrace) tail(n int) string {
	lines := tr.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// modelConfig is the timer a sequence runs against.
type modelConfig struct {
	tick       time.Duration // given to WithTickDuration
	wheel      int           // given to WithTicksPerWheel
	maxPending int64
	start      time.Duration // the fake clock's reading when the timer is made
	lazy       bool          // started by the first NewTimeout, not by Start
}

func modelGenConfig(src modelSource) modelConfig {
	ticks := []time.Duration{time.Millisecond, 10 * time.Millisecond, 3 * time.Millisecond,
		2 * time.Millisecond, time.Second, 7777777}
	wheels := []int{1, 2, 3, 4, 8, 16, 64, 512}
	starts := []time.Duration{0, 12345, 1<<40 + 777, 1 << 62}
	cfg := modelConfig{
		tick:  ticks[src.intn(len(ticks))],
		wheel: wheels[src.intn(len(wheels))],
		start: starts[src.intn(len(starts))],
		lazy:  src.intn(3) == 0,
	}
	if src.intn(4) == 0 {
		cfg.maxPending = 1 + src.int64n(8)
	}
	return cfg
}

// modelState is where the model says a timeout is.
type modelState int

const (
	modelAlive     modelState = iota // accepted, neither fired nor cancelled
	modelFired                       // its task ran
	modelCancelled                   // Cancel returned true
	modelStopped                     // returned by Stop
)

func (s modelState) String() string {
	return [...]string{"alive", "fired", "cancelled", "stopped"}[s]
}

// modelEntry is the model of one accepted timeout.
type modelEntry struct {
	id         int
	handle     Timeout
	task       TimerTask // nil for AfterFunc
	hooked     bool      // the task has a Cancelled hook
	delay      time.Duration
	created    int64 // clock when made, after the start
	deadline   int64 // after the start, clamped
	fireTick   int64
	state      modelState
	firedAt    int64 // the clock, after the start, when it must have fired
	cancelTick int64 // the tick in progress when Cancel succeeded
	processed  bool  // the cancellation has been processed
	uncertain  bool  // cancelled during a tick: processed in it or in the next

	period  int64   // of a periodic timeout made by Every; 0 for one-shot
	nextDue int64   // a periodic timeout's next run's deadline
	runsAt  []int64 // a periodic timeout's runs, the clock after the start
}

// modelRecorder is what the tasks report, from the worker goroutine.
type modelRecorder struct {
	mu    sync.Mutex
	fake  *clock.Fake
	fired map[int][]int64 // id → fake clock readings at each run
	seq   map[int]int     // id → position of its first run among all runs
	runs  int
	hooks map[int]int // id → Cancelled calls
	wrong []string    // a task got a Timeout that is not its own
}

func (r *modelRecorder) run(id int, to Timeout, task TimerTask) {
	now := r.fake.Nanotime()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fired[id] = append(r.fired[id], now)
	if _, ok := r.seq[id]; !ok {
		r.seq[id] = r.runs
	}
	r.runs++
	if to != nil && to.Task() != task {
		r.wrong = append(r.wrong, fmt.Sprintf("timeout %d: Run got a Timeout whose Task is another task", id))
	}
}

func (r *modelRecorder) hook(id int) {
	r.mu.Lock()
	r.hooks[id]++
	r.mu.Unlock()
}

// modelHookedTask returns a task with a Cancelled hook that reports to rec.
func modelHookedTask(rec *modelRecorder, id int) *hookTask {
	task := &hookTask{onCancel: func(Timeout) { rec.hook(id) }}
	task.onRun = func(to Timeout) { rec.run(id, to, task) }
	return task
}

// modelPlainTask is a TimerTask without a hook.
type modelPlainTask struct {
	rec *modelRecorder
	id  int
}

func (m *modelPlainTask) Run(to Timeout) { m.rec.run(m.id, to, m) }

// modelHarness drives one timer and its model.
type modelHarness struct {
	cfg      modelConfig
	tick     int64 // the effective tick
	wheelLen int
	fake     *clock.Fake
	h        *HashedWheelTimer
	rec      *modelRecorder
	trace    *modelTrace

	started  bool
	startAbs int64 // fake clock reading at the start
	stopped  bool
	nextID   int
	entries  []*modelEntry
	byID     map[int]*modelEntry

	accepted, rejectedFull, rejectedStopped uint64
	returned, resets, periodicRuns          uint64
	periodicSkipped                         uint64
	late                                    histogram.Snapshot // how late each run started: pool.Inline hands over none late
}

// modelRun builds a timer from src and runs up to maxOps operations on it
// and on the model, checking them against each other after every step.
func modelRun(src modelSource, maxOps int, trace *modelTrace) error {
	cfg := modelGenConfig(src)
	m := &modelHarness{cfg: cfg, trace: trace, byID: map[int]*modelEntry{}}
	m.tick = int64(max(cfg.tick, MinTickDuration))
	m.wheelLen = 1
	for m.wheelLen < cfg.wheel {
		m.wheelLen <<= 1
	}
	m.fake = newFakeAt(cfg.start)
	m.rec = &modelRecorder{fake: m.fake, fired: map[int][]int64{}, seq: map[int]int{}, hooks: map[int]int{}}
	trace.add("config: tick %v (effective %v), wheel %d, maxPending %d, clock start %d, lazy %v",
		cfg.tick, time.Duration(m.tick), cfg.wheel, cfg.maxPending, cfg.start, cfg.lazy)
	h, err := New(WithTickDuration(cfg.tick), WithTicksPerWheel(cfg.wheel),
		WithMaxPendingTimeouts(cfg.maxPending), WithExecutor(pool.Inline),
		WithLogger(discardLogger()), WithClock(m.fake))
	if err != nil {
		return fmt.Errorf("New: %v", err)
	}
	m.h = h
	defer h.Stop()
	if !cfg.lazy {
		if err := h.Start(); err != nil {
			return fmt.Errorf("Start: %v", err)
		}
		m.started, m.startAbs = true, m.fake.Nanotime()
		m.fake.WaitAsleep()
	}
	if err := m.check(); err != nil {
		return err
	}
	for op := 0; op < maxOps && !src.exhausted(); op++ {
		if err := m.step(src); err != nil {
			return err
		}
	}
	if !m.stopped {
		if err := m.stop(); err != nil {
			return err
		}
	}
	return nil
}

// now returns the fake clock after the start (0 before it).
func (m *modelHarness) now() int64 {
	if !m.started {
		return 0
	}
	return m.fake.Nanotime() - m.startAbs
}

// curTick returns the tick in progress: all ticks before it have been
// processed.
func (m *modelHarness) curTick() int64 { return modelFloorDiv(m.now(), m.tick) }

// modelDueTick returns the tick that covers deadline d: ⌈d/tick⌉−1.
func modelDueTick(d, tick int64) int64 { return modelFloorDiv(d-1, tick) }

func modelFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (m *modelHarness) step(src modelSource) error {
	switch op := src.intn(100); {
	case op < 20:
		return m.batch([]time.Duration{m.genDelay(src)}, nil, src.intn(4) == 0)
	case op < 24:
		return m.newTimeouts(src)
	case op < 32:
		return m.reset(src)
	case op < 36:
		return m.every(src)
	case op < 42:
		if len(m.entries) == 0 {
			return m.batch([]time.Duration{m.genDelay(src)}, nil, false)
		}
		return m.batch(nil, []*modelEntry{m.entries[src.intn(len(m.entries))]}, false)
	case op < 56:
		k := 2 + src.intn(7)
		var delays []time.Duration
		var cancels []*modelEntry
		for i := 0; i < k; i++ {
			if len(m.entries) > 0 && src.intn(2) == 0 {
				// Recent timeouts are the likelier targets; duplicates
				// race on the same timeout.
				n := len(m.entries)
				cancels = append(cancels, m.entries[n-1-src.intn(min(n, 12))])
			} else {
				delays = append(delays, m.genDelay(src))
			}
		}
		return m.batch(delays, cancels, src.intn(4) == 0)
	case op < 76:
		return m.stepTicks(1 + src.intn(min(2*m.wheelLen+2, 24)))
	case op < 87:
		return m.advance(time.Duration(1 + src.int64n(min(4*int64(m.wheelLen), 100)*m.tick)))
	case op < 94:
		return m.raceCancel(src)
	case op < 97:
		return m.nilTask(src.intn(2) == 0)
	default:
		return m.stop()
	}
}

// genDelay picks a delay: mostly within a few turns of the wheel, with
// boundaries, zero, negative and extreme values.
func (m *modelHarness) genDelay(src modelSource) time.Duration {
	tick, span := m.tick, int64(m.wheelLen)*m.tick
	now := m.now()
	switch src.intn(16) {
	case 0:
		return 0
	case 1:
		return -time.Duration(1 + src.int64n(3*tick))
	case 2: // a deadline exactly on a tick boundary
		k := src.int64n(2*int64(m.wheelLen) + 3)
		return time.Duration(k*tick - now%tick)
	case 3:
		extremes := []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1,
			math.MaxInt64 - now, // deadline exactly MaxInt64
			math.MaxInt64 / 2, 1000 * span}
		return time.Duration(extremes[src.intn(len(extremes))])
	case 4, 5: // several turns of the wheel
		return time.Duration(src.int64n(4*span + 3*tick))
	default:
		return time.Duration(src.int64n(min(2*span, 64*tick) + tick))
	}
}

// modelDeadline is the deadline, after the start, of a timeout made at now
// with delay, as the timer must compute it: 1ns after now for a delay of zero or
// less, clamped instead of overflowing, rounded up to 8ns.
func modelDeadline(now int64, delay time.Duration) int64 {
	d := now + 1 // a zero or negative delay: just after the call
	switch {
	case delay > 0 && now > math.MaxInt64-int64(delay):
		return math.MaxInt64
	case delay > 0:
		d = now + int64(delay)
	}
	return modelRound(d)
}

// modelRound rounds d up to the deadline's unit of 8ns.
func modelRound(d int64) int64 {
	if d > math.MaxInt64-15 { // the last 8ns unit stands for math.MaxInt64
		return math.MaxInt64
	}
	return (d + 7) &^ 7
}

// batch runs NewTimeout (or AfterFunc) with each delay and Cancel on each
// entry, concurrently when there are several, and joins them.
func (m *modelHarness) batch(delays []time.Duration, cancels []*modelEntry, afterFunc bool) error {
	type newResult struct {
		id   int
		task TimerTask
		to   Timeout
		err  error
	}
	news := make([]newResult, len(delays))
	for i := range delays {
		m.nextID++
		id := m.nextID
		news[i].id = id
		switch {
		case afterFunc:
		case id%3 == 0:
			news[i].task = &modelPlainTask{rec: m.rec, id: id}
		default:
			news[i].task = modelHookedTask(m.rec, id)
		}
	}
	cancelled := make([]bool, len(cancels))
	// What the timer counts as pending now, with the worker asleep: the
	// model's count, less the racing cancellations already processed
	// (check has verified the two agree).
	pendingBefore := m.h.PendingTimeouts()
	do := func(i int) {
		if i < len(delays) {
			r := &news[i]
			if afterFunc {
				rec, id := m.rec, r.id
				r.to, r.err = m.h.AfterFunc(delays[i], func() { rec.run(id, nil, nil) })
			} else {
				r.to, r.err = m.h.NewTimeout(r.task, delays[i])
			}
			return
		}
		cancelled[i-len(delays)] = cancels[i-len(delays)].handle.Cancel()
	}
	if n := len(delays) + len(cancels); n == 1 {
		do(0)
	} else {
		start, wait := concurrently(n, do)
		start()
		wait()
	}
	m.fake.WaitAsleep()

	// The model's account of the same calls.
	if len(delays) > 0 {
		if err := m.startedLazily(); err != nil {
			return err
		}
	}
	now, cur := m.now(), m.curTick()
	room := len(delays)
	if m.cfg.maxPending > 0 {
		room = int(max(0, min(int64(room), m.cfg.maxPending-pendingBefore)))
	}
	var ids []string
	acceptedHere := 0
	for i, r := range news {
		ids = append(ids, fmt.Sprintf("#%d(%v)", r.id, delays[i]))
		switch {
		case m.stopped:
			if !errors.Is(r.err, ErrStopped) || r.to != nil {
				return fmt.Errorf("NewTimeout #%d after Stop: (%v, %v), want ErrStopped", r.id, r.to, r.err)
			}
			m.rejectedStopped++
		case errors.Is(r.err, ErrTooManyPendingTimeouts) && m.cfg.maxPending > 0:
			if r.to != nil {
				return fmt.Errorf("NewTimeout #%d: a Timeout with an error", r.id)
			}
			m.rejectedFull++
		case r.err != nil || r.to == nil:
			return fmt.Errorf("NewTimeout #%d(%v): (%v, %v)", r.id, delays[i], r.to, r.err)
		default:
			acceptedHere++
			if err := m.accept(r.id, r.to, r.task, delays[i], now, cur); err != nil {
				return err
			}
		}
	}
	// Cancels in the same batch may be processed before some of the
	// NewTimeout calls, each freeing a place under the limit.
	roomMax := room
	if m.cfg.maxPending > 0 {
		freed := 0
		for _, c := range cancelled {
			if c {
				freed++
			}
		}
		roomMax = int(max(0, min(int64(len(delays)), m.cfg.maxPending-pendingBefore+int64(freed))))
	}
	if !m.stopped && (acceptedHere < room || acceptedHere > roomMax) {
		return fmt.Errorf("%d of %d NewTimeout calls accepted with %d pending and limit %d, want %d to %d",
			acceptedHere, len(delays), pendingBefore, m.cfg.maxPending, room, roomMax)
	}
	// Cancel: exactly one successful call per timeout that was alive, none
	// for the others.
	wins := map[*modelEntry]int{}
	var targets []*modelEntry
	for i, e := range cancels {
		ids = append(ids, fmt.Sprintf("cancel#%d", e.id))
		if _, seen := wins[e]; !seen {
			targets = append(targets, e)
			wins[e] = 0
		}
		if cancelled[i] {
			wins[e]++
		}
	}
	for _, e := range targets {
		want := 0
		if e.state == modelAlive {
			want = 1
			// Processed by the end of the tick in progress, or sooner if
			// the worker sleeps past it: the Cancel wakes it.
			e.state, e.cancelTick, e.uncertain = modelCancelled, cur, true
		}
		if wins[e] != want {
			return fmt.Errorf("Cancel of #%d (%v before the call): %d calls returned true, want %d",
				e.id, map[bool]string{true: "alive", false: "not alive"}[want == 1], wins[e], want)
		}
	}
	m.trace.add("t=%d tick %d: %s", now, cur, strings.Join(ids, " "))
	return m.check()
}

// startedLazily notes in the model the start of a timer that a call
// scheduling timeouts started, and checks the timer's.
func (m *modelHarness) startedLazily() error {
	if m.started || m.stopped {
		return nil
	}
	m.started, m.startAbs = true, m.fake.Nanotime()
	if got := m.h.startNanos; got != m.startAbs {
		return fmt.Errorf("lazy start: startNanos %d, want the clock reading %d", got, m.startAbs)
	}
	return nil
}

// accept adds to the model the timeout to, of task, accepted at now, in
// tick cur, with delay, and checks its Deadline, Timer and Task.
func (m *modelHarness) accept(id int, to Timeout, task TimerTask, delay time.Duration, now, cur int64) error {
	m.accepted++
	e := &modelEntry{id: id, handle: to, task: task, delay: delay, created: now, deadline: modelDeadline(now, delay)}
	_, e.hooked = task.(*hookTask)
	e.fireTick = max(modelDueTick(e.deadline, m.tick), cur)
	if want := startTime(m.h).Add(time.Duration(e.deadline)); !to.Deadline().Equal(want) {
		return fmt.Errorf("timeout #%d: Deadline() is %v, want the start %+v = %v",
			id, to.Deadline(), time.Duration(e.deadline), want)
	}
	if to.Timer() != m.h || (task != nil && to.Task() != task) {
		return fmt.Errorf("timeout #%d: Timer() or Task() is not what was scheduled", id)
	}
	m.entries = append(m.entries, e)
	m.byID[e.id] = e
	return nil
}

// newTimeouts makes one NewTimeouts call of one to six tasks, at times with
// a nil one among them, and checks that it schedules all, each as
// NewTimeout would with the one delay, or none: after Stop, or when the
// pending limit has no room for all, or for a nil task.
func (m *modelHarness) newTimeouts(src modelSource) error {
	delay, k := m.genDelay(src), 1+src.intn(6)
	nilAt := -1
	if src.intn(8) == 0 {
		nilAt = src.intn(k)
	}
	tasks, ids := make([]TimerTask, k), make([]int, k)
	for i := range tasks {
		if i == nilAt {
			continue
		}
		m.nextID++
		if ids[i] = m.nextID; ids[i]%3 == 0 {
			tasks[i] = &modelPlainTask{rec: m.rec, id: ids[i]}
		} else {
			tasks[i] = modelHookedTask(m.rec, ids[i])
		}
	}
	pendingBefore := m.h.PendingTimeouts()
	tos, err := m.h.NewTimeouts(delay, tasks...)
	m.fake.WaitAsleep()
	m.trace.add("t=%d tick %d: NewTimeouts(%v, %d tasks, nil at %d): %v", m.now(), m.curTick(), delay, k, nilAt, err)
	if nilAt >= 0 {
		if !errors.Is(err, ErrNilTask) || tos != nil {
			return fmt.Errorf("NewTimeouts with a nil task: (%v, %v), want ErrNilTask", tos, err)
		}
		return m.check()
	}
	if err := m.startedLazily(); err != nil {
		return err
	}
	now, cur := m.now(), m.curTick()
	switch full := m.cfg.maxPending > 0 && pendingBefore+int64(k) > m.cfg.maxPending; {
	case m.stopped:
		if !errors.Is(err, ErrStopped) || tos != nil {
			return fmt.Errorf("NewTimeouts after Stop: (%v, %v), want ErrStopped", tos, err)
		}
		m.rejectedStopped += uint64(k)
	case full:
		if !errors.Is(err, ErrTooManyPendingTimeouts) || tos != nil {
			return fmt.Errorf("NewTimeouts of %d with %d pending and limit %d: (%v, %v), want ErrTooManyPendingTimeouts",
				k, pendingBefore, m.cfg.maxPending, tos, err)
		}
		m.rejectedFull += uint64(k)
	case err != nil || len(tos) != k:
		return fmt.Errorf("NewTimeouts of %d: %d timeouts, %v", k, len(tos), err)
	default:
		for i, to := range tos {
			if err := m.accept(ids[i], to, tasks[i], delay, now, cur); err != nil {
				return err
			}
		}
	}
	return m.check()
}

// nilTask checks that a nil task is refused and changes nothing.
func (m *modelHarness) nilTask(afterFunc bool) error {
	var err error
	if afterFunc {
		_, err = m.h.AfterFunc(time.Millisecond, nil)
	} else {
		_, err = m.h.NewTimeout(nil, time.Millisecond)
	}
	m.trace.add("nil task (AfterFunc %v): %v", afterFunc, err)
	if !errors.Is(err, ErrNilTask) {
		return fmt.Errorf("nil task: %v, want ErrNilTask", err)
	}
	m.fake.WaitAsleep()
	return m.check()
}

// raceCancel cancels timeouts from several goroutines while the clock
// crosses the end of the tick in progress, in which some of them are due.
// Each due one is either cancelled (one Cancel returns true, and it never
// runs) or runs (every Cancel returns false); never both, never neither.
// A timeout not due must be cancelled. Whether a cancellation is processed
// in this tick or the next depends on the race; it is certain one tick
// later.
func (m *modelHarness) raceCancel(src modelSource) error {
	if !m.started || m.stopped || len(m.entries) == 0 {
		return m.stepTicks(1)
	}
	cur := m.curTick()
	var targets []*modelEntry
	for _, e := range m.entries {
		if e.state == modelAlive && e.period == 0 && e.fireTick == cur && len(targets) < 8 {
			targets = append(targets, e)
		}
	}
	for i := src.intn(3); i > 0; i-- { // others, perhaps not alive, perhaps twice
		// A periodic timeout's Cancel racing its run leaves the run
		// uncertain: not here.
		if e := m.entries[src.intn(len(m.entries))]; e.period == 0 {
			targets = append(targets, e)
		}
	}
	if len(targets) == 0 {
		return m.stepTicks(1)
	}
	before := map[*modelEntry]modelState{}
	for _, e := range targets {
		before[e] = e.state
	}
	results := make([]bool, len(targets))
	start, wait := concurrently(len(targets), func(i int) { results[i] = targets[i].handle.Cancel() })
	start()
	m.fake.Jump(time.Duration(m.tick - m.now()%m.tick))
	wait()
	m.fake.WaitAsleep()
	now, next := m.now(), m.curTick()

	wins := map[*modelEntry]int{}
	for i, e := range targets {
		if results[i] {
			wins[e]++
		}
	}
	var ids []string
	for e, state := range before {
		switch {
		case state != modelAlive:
			if wins[e] != 0 {
				return fmt.Errorf("racing Cancel of #%d (%v): returned true", e.id, state)
			}
			continue
		case wins[e] > 1:
			return fmt.Errorf("racing Cancel of #%d: %d calls returned true", e.id, wins[e])
		case wins[e] == 1:
			e.state, e.cancelTick, e.uncertain = modelCancelled, next, true
			ids = append(ids, fmt.Sprintf("#%d cancelled", e.id))
		case e.fireTick != cur:
			return fmt.Errorf("racing Cancel of #%d, alive and not due (fire tick %d, tick %d): every call returned false",
				e.id, e.fireTick, cur)
		default: // the tick claimed it first
			ids = append(ids, fmt.Sprintf("#%d fired", e.id))
		}
	}
	fired, processed := m.endTicks(now, next)
	sort.Strings(ids)
	m.trace.add("race %d Cancels with the end of tick %d (t=%d): %s; %d fire, %d cancellations processed",
		len(targets), cur, now, strings.Join(ids, " "), fired, processed)
	return m.check()
}

// endTicks applies, in the model, the ticks before cur, processed with the
// clock at now: the timeouts due in them fire, periodic ones run, and the
// cancellations made in them are processed. It returns how many fired and
// how many cancellations were processed.
func (m *modelHarness) endTicks(now, cur int64) (fired, processed int) {
	for _, e := range m.entries {
		switch {
		case e.period != 0 && e.state == modelAlive:
			fired += m.runPeriodic(e, now, cur)
		case e.state == modelAlive && e.fireTick < cur:
			e.state, e.firedAt = modelFired, now
			m.ran(now - e.deadline)
			fired++
		case e.state == modelCancelled && !e.processed && e.cancelTick < cur:
			e.processed, e.uncertain = true, false
			processed++
		}
	}
	return fired, processed
}

// slotOf returns the histogram slot of a lateness of ns nanoseconds: the
// first whose upper bound is at least it.
func slotOf(ns int64) int {
	s := 0
	for s < histogram.Len-1 && ns > histogram.Upper(s) {
		s++
	}
	return s
}

// ran counts a run that started late after its deadline.
func (m *modelHarness) ran(late int64) {
	m.late.Counts[slotOf(late)]++
	m.late.Sum += late
	m.late.Max = max(m.late.Max, late)
}

// runPeriodic runs, in the model, the periodic timeout e once the clock has
// moved to now, in tick cur: if the tick of its next run has ended, the run
// happens now, and the next is the first whole period after the start of
// cur's tick, the runs of the ticks in between skipped and counted. It
// returns the number of runs, 0 or 1.
func (m *modelHarness) runPeriodic(e *modelEntry, now, cur int64) int {
	if modelDueTick(e.nextDue, m.tick) >= cur {
		return 0
	}
	e.runsAt = append(e.runsAt, now)
	m.ran(now - e.nextDue)
	m.periodicRuns++
	from := cur * m.tick // the next run is due after it, in a tick yet to end
	k := int64(1)
	if from >= e.nextDue {
		k = (from-e.nextDue)/e.period + 1
	}
	if k > (math.MaxInt64-e.nextDue)/e.period {
		e.nextDue = math.MaxInt64
	} else {
		e.nextDue = modelRound(e.nextDue + k*e.period)
		m.periodicSkipped += uint64(k - 1)
	}
	return 1
}

// reset moves the deadline of up to three random timeouts, one goroutine
// each: a Reset succeeds exactly on a timeout that is alive, which then
// fires by its new deadline, as if made now with the new delay; a periodic
// timeout's next run moves and its period stays.
func (m *modelHarness) reset(src modelSource) error {
	if len(m.entries) == 0 {
		return m.every(src)
	}
	var targets []*modelEntry
	seen := map[*modelEntry]bool{}
	for i := 1 + src.intn(3); i > 0; i-- {
		if e := m.entries[len(m.entries)-1-src.intn(min(len(m.entries), 12))]; !seen[e] {
			seen[e] = true
			targets = append(targets, e)
		}
	}
	delays := make([]time.Duration, len(targets))
	for i := range delays {
		delays[i] = m.genDelay(src)
	}
	results := make([]bool, len(targets))
	start, wait := concurrently(len(targets), func(i int) { results[i] = targets[i].handle.Reset(delays[i]) })
	start()
	wait()
	m.fake.WaitAsleep()
	now, cur := m.now(), m.curTick()
	var ids []string
	for i, e := range targets {
		ids = append(ids, fmt.Sprintf("reset#%d(%v)=%v", e.id, delays[i], results[i]))
		if want := e.state == modelAlive; results[i] != want {
			return fmt.Errorf("Reset of #%d (%v): %v, want %v", e.id, e.state, results[i], want)
		}
		if !results[i] {
			continue
		}
		m.resets++
		e.deadline, e.delay, e.created = modelDeadline(now, delays[i]), delays[i], now
		e.fireTick = max(modelDueTick(e.deadline, m.tick), cur)
		e.nextDue = e.deadline
		if want := startTime(m.h).Add(time.Duration(e.deadline)); !e.handle.Deadline().Equal(want) {
			return fmt.Errorf("timeout #%d after Reset(%v): Deadline() is %v, want %v", e.id, delays[i], e.handle.Deadline(), want)
		}
	}
	m.trace.add("t=%d tick %d: %s", now, cur, strings.Join(ids, " "))
	return m.check()
}

// every starts a periodic timeout with a period from a fraction of a tick,
// which Every refuses, to over a turn of the wheel.
func (m *modelHarness) every(src modelSource) error {
	periods := []int64{m.tick / 3, m.tick, 5 * m.tick / 2, 7 * m.tick, int64(m.wheelLen)*m.tick + 1}
	period := time.Duration(max(periods[src.intn(len(periods))], 1))
	m.nextID++
	id := m.nextID
	rec := m.rec
	to, err := m.h.Every(period, func() { rec.run(id, nil, nil) })
	m.fake.WaitAsleep()
	if !m.started && !m.stopped {
		m.started, m.startAbs = true, m.fake.Nanotime()
	}
	now := m.now()
	m.trace.add("t=%d tick %d: every#%d(%v)", now, m.curTick(), id, period)
	switch {
	case m.stopped:
		if !errors.Is(err, ErrStopped) {
			return fmt.Errorf("Every after Stop: %v, want ErrStopped", err)
		}
		m.rejectedStopped++
		return m.check()
	case int64(period) < m.tick:
		if !errors.Is(err, ErrInvalidPeriod) {
			return fmt.Errorf("Every(%v) with a tick of %v: %v, want ErrInvalidPeriod", period, time.Duration(m.tick), err)
		}
		return m.check()
	case errors.Is(err, ErrTooManyPendingTimeouts) && m.cfg.maxPending > 0:
		m.rejectedFull++
		return m.check()
	case err != nil:
		return fmt.Errorf("Every(%v): %v", period, err)
	}
	m.accepted++
	e := &modelEntry{id: id, handle: to, delay: period, created: now, period: int64(period),
		deadline: modelDeadline(now, period)}
	e.nextDue = e.deadline
	e.fireTick = modelDueTick(e.deadline, m.tick)
	m.entries = append(m.entries, e)
	m.byID[id] = e
	return m.check()
}

// stepTicks moves the clock to the end of the tick in progress, n times,
// checking after each.
func (m *modelHarness) stepTicks(n int) error {
	for i := 0; i < n; i++ {
		d := m.tick
		if m.started {
			d = m.tick - (m.now() % m.tick)
		}
		if err := m.advance(time.Duration(d)); err != nil {
			return err
		}
	}
	return nil
}

// advance moves the clock by d in one jump: the worker processes every
// tick that ended, back to back.
func (m *modelHarness) advance(d time.Duration) error {
	before := m.curTick()
	m.fake.Jump(d)
	m.fake.WaitAsleep()
	now, cur := m.now(), m.curTick()
	fired, processed := 0, 0
	if m.started && !m.stopped {
		fired, processed = m.endTicks(now, cur)
	}
	ticks := "no tick ended"
	if cur > before {
		ticks = fmt.Sprintf("ticks %d..%d ended", before, cur-1)
	}
	m.trace.add("advance %v to t=%d (%s): %d fire, %d cancellations processed", d, now, ticks, fired, processed)
	return m.check()
}

// stop calls Stop, which must return exactly the alive timeouts.
func (m *modelHarness) stop() error {
	res := m.h.Stop()
	m.fake.WaitAsleep()
	m.trace.add("Stop: %d returned", len(res))
	if !m.started || m.stopped {
		if res != nil {
			return fmt.Errorf("Stop (started %v, stopped %v) returned %d timeouts, want nil", m.started, m.stopped, len(res))
		}
		m.stopped = true
		return m.check()
	}
	m.stopped = true
	got := map[Timeout]bool{}
	for _, to := range res {
		if got[to] {
			return fmt.Errorf("Stop returned %v twice", to)
		}
		got[to] = true
	}
	for _, e := range m.entries {
		switch {
		case e.state == modelAlive:
			if !got[e.handle] {
				return fmt.Errorf("Stop did not return alive timeout #%d (deadline %d, fire tick %d)", e.id, e.deadline, e.fireTick)
			}
			delete(got, e.handle)
			e.state = modelStopped
			m.returned++
		case e.state == modelCancelled:
			e.processed, e.uncertain = true, false
		}
	}
	if len(got) != 0 {
		return fmt.Errorf("Stop returned %d timeouts that were not alive", len(got))
	}
	if err := m.check(); err != nil {
		return err
	}
	for _, e := range m.entries {
		if e.state == modelStopped && e.handle.Cancel() {
			return fmt.Errorf("Cancel of #%d after Stop returned it: true", e.id)
		}
	}
	return nil
}

// pending is PendingTimeouts as the model counts it.
func (m *modelHarness) pending() int64 {
	if m.stopped {
		return 0
	}
	var n int64
	for _, e := range m.entries {
		if e.state == modelAlive { // a Cancel frees its place as it returns
			n++
		}
	}
	return n
}

// check compares the timer with the model.
func (m *modelHarness) check() error {
	if err := verifyWheel(m.h); err != nil {
		return fmt.Errorf("the wheel's invariants: %w", err)
	}
	m.rec.mu.Lock()
	defer m.rec.mu.Unlock()
	if len(m.rec.wrong) > 0 {
		return errors.New(m.rec.wrong[0])
	}
	var fired, cancels, slack, slackHooks uint64
	for _, e := range m.entries {
		runs := m.rec.fired[e.id]
		switch {
		case e.period != 0:
			if !slices.Equal(m.relative(runs), e.runsAt) {
				return fmt.Errorf("periodic #%d (%v, period %d, next due %d): ran at %v, want %v",
					e.id, e.state, e.period, e.nextDue, m.relative(runs), e.runsAt)
			}
		case e.state == modelFired:
			fired++
			if len(runs) != 1 || runs[0]-m.startAbs != e.firedAt {
				return fmt.Errorf("timeout #%d (delay %v, deadline %d, fire tick %d, made at %d): ran at %v, want once at t=%d",
					e.id, e.delay, e.deadline, e.fireTick, e.created, m.relative(runs), e.firedAt)
			}
			if runs[0]-m.startAbs < e.deadline {
				return fmt.Errorf("timeout #%d ran at t=%d, before its deadline %d", e.id, runs[0]-m.startAbs, e.deadline)
			}
		default:
			if len(runs) != 0 {
				return fmt.Errorf("timeout #%d (%v, delay %v, deadline %d, fire tick %d, made at %d, tick now %d) ran at %v",
					e.id, e.state, e.delay, e.deadline, e.fireTick, e.created, m.curTick(), m.relative(runs))
			}
		}
		wantHook := 0
		if e.state == modelCancelled && e.processed {
			cancels++
			if e.hooked {
				wantHook = 1
			}
		}
		if e.state == modelCancelled && e.uncertain && !e.processed {
			// Processed in the tick it raced with, or not yet.
			slack++
			if e.hooked && m.rec.hooks[e.id] == 1 {
				slackHooks++
				wantHook = 1
			}
		}
		if got := m.rec.hooks[e.id]; got != wantHook {
			return fmt.Errorf("timeout #%d (%v, processed %v): Cancelled hook called %d times, want %d",
				e.id, e.state, e.processed, got, wantHook)
		}
		wantExpired := e.state == modelFired
		wantCancelled := e.state == modelCancelled || e.state == modelStopped
		if e.handle.IsExpired() != wantExpired || e.handle.IsCancelled() != wantCancelled {
			return fmt.Errorf("timeout #%d (%v): IsExpired %v, IsCancelled %v", e.id,
				e.state, e.handle.IsExpired(), e.handle.IsCancelled())
		}
	}
	// Inline tasks run tick by tick and, within a tick, in deadline order.
	var order []*modelEntry
	for _, e := range m.entries {
		if e.state == modelFired && e.period == 0 {
			order = append(order, e)
		}
	}
	sort.Slice(order, func(i, j int) bool { return m.rec.seq[order[i].id] < m.rec.seq[order[j].id] })
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		if a.fireTick > b.fireTick || (a.fireTick == b.fireTick && a.deadline > b.deadline) {
			return fmt.Errorf("timeout #%d (tick %d, deadline %d) ran before #%d (tick %d, deadline %d)",
				a.id, a.fireTick, a.deadline, b.id, b.fireTick, b.deadline)
		}
	}
	for id, runs := range m.rec.fired {
		if m.byID[id] == nil {
			return fmt.Errorf("task #%d, never accepted, ran at %v", id, m.relative(runs))
		}
	}
	want := Stats{
		Pending:         m.pending(),
		Scheduled:       m.accepted,
		Expired:         fired,
		Cancelled:       cancels,
		ReturnedByStop:  m.returned,
		Resets:          m.resets,
		PeriodicRuns:    m.periodicRuns,
		PeriodicSkipped: m.periodicSkipped,
		RejectedFull:    m.rejectedFull,
		RejectedStopped: m.rejectedStopped,
		LatenessP50:     time.Duration(m.late.Quantile(0.5)),
		LatenessP99:     time.Duration(m.late.Quantile(0.99)),
		MaxLateness:     time.Duration(m.late.Max),
	}
	if l := m.h.Lateness(); l.Total != fromSnapshot(m.late) || l.HandOver != l.Total || l.HandOff.Sum != 0 || l.HandOff.Count() != l.Total.Count() {
		return fmt.Errorf("Lateness() = %+v, want Total and HandOver %+v, HandOff all 0", l, m.late)
	}
	got := m.h.Stats()
	if slack > 0 {
		// Cancellations that raced with a tick may or may not have been
		// processed by it; the counters must agree with each other and
		// with the hooks that ran.
		extra := got.Cancelled - cancels
		if got.Cancelled < cancels+slackHooks || extra > slack {
			return fmt.Errorf("Stats().Cancelled = %d, want %d to %d (%d racing cancellations, %d hooks seen)",
				got.Cancelled, cancels+slackHooks, cancels+slack, slack, slackHooks)
		}
		want.Cancelled += extra
	}
	if p := m.h.PendingTimeouts(); p != want.Pending {
		return fmt.Errorf("PendingTimeouts() = %d, want %d", p, want.Pending)
	}
	got.Ticks, got.MaxTickLag, got.ExecutorFailures = 0, 0, 0
	if got != want {
		return fmt.Errorf("Stats() = %+v, want %+v", got, want)
	}
	return nil
}

func (m *modelHarness) relative(runs []int64) []int64 {
	out := make([]int64, len(runs))
	for i, r := range runs {
		out[i] = r - m.startAbs
	}
	return out
}
