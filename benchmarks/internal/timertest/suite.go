package timertest

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Factory returns a started timer with a resolution of about a millisecond
// that runs expired tasks on exec, or, if exec is nil, on the executor the
// timer makes for itself by default. The suite stops it.
type Factory func(tb testing.TB, exec pool.Executor) hashedwheel.Timer

// patience bounds every wait for something the timer must do: far above
// any honest delay, so that only a lost or stuck timeout reaches it.
const patience = 20 * time.Second

// Run runs the whole suite on the timers newTimer makes.
func Run(t *testing.T, newTimer Factory) {
	executors := []struct {
		name string
		make func(t *testing.T) pool.Executor
	}{
		{"inline", func(*testing.T) pool.Executor { return pool.Inline }},
		{"ants", newAnts},
	}
	for _, ex := range executors {
		t.Run("NeverEarlyExactlyOnce/"+ex.name, func(t *testing.T) {
			testNeverEarlyExactlyOnce(t, newTimer(t, ex.make(t)))
		})
	}
	t.Run("CancelFromManyGoroutines", func(t *testing.T) {
		testCancelFromManyGoroutines(t, newTimer(t, pool.Inline))
	})
	t.Run("StopReturnsExactlyPending", func(t *testing.T) {
		testStopReturnsExactlyPending(t, newTimer(t, pool.Inline))
	})
	t.Run("StopRacesNewTimeout", func(t *testing.T) {
		testStopRacesNewTimeout(t, newTimer(t, pool.Inline))
	})
	t.Run("Errors", func(t *testing.T) { testErrors(t, newTimer(t, pool.Inline)) })
	t.Run("TaskSchedulesAndStops", func(t *testing.T) {
		testTaskSchedulesAndStops(t, newTimer(t, pool.Inline))
	})
	t.Run("PanicIsContained", func(t *testing.T) { testPanicIsContained(t, newTimer(t, newAnts(t))) })
	t.Run("CancelledHook", func(t *testing.T) { testCancelledHook(t, newTimer(t, pool.Inline)) })
	t.Run("Accessors", func(t *testing.T) { testAccessors(t, newTimer(t, pool.Inline)) })
	t.Run("DueTogetherStartTogether", func(t *testing.T) {
		testDueTogetherStartTogether(t, newTimer(t, nil))
	})
	t.Run("StopWaitsForTasks", func(t *testing.T) { testStopWaitsForTasks(t, newTimer(t, newAnts(t))) })
	t.Run("StopFromTaskOnExecutor", func(t *testing.T) {
		testStopFromTaskOnExecutor(t, newTimer(t, newAnts(t)))
	})
	t.Run("Reset/Later", func(t *testing.T) { testResetLater(t, newTimer(t, pool.Inline)) })
	t.Run("Reset/Earlier", func(t *testing.T) { testResetEarlier(t, newTimer(t, pool.Inline)) })
	t.Run("Reset/AfterEnd", func(t *testing.T) { testResetAfterEnd(t, newTimer(t, pool.Inline)) })
	t.Run("Reset/Races", func(t *testing.T) { testResetRaces(t, newTimer(t, newAnts(t))) })
}

// newAnts returns a small goroutine pool, released when the test ends
// (after the timer's own cleanup, which was registered later).
func newAnts(t *testing.T) pool.Executor {
	a, err := pool.NewAnts(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Release)
	return a
}

// probe is a task that records how often and how early it ran.
type probe struct {
	earliest time.Time // the caller's own deadline: call start + delay
	runs     atomic.Int32
	early    atomic.Int64 // nanoseconds before a deadline, if it ran early
	fired    chan<- *probe
}

func (p *probe) Run(to hashedwheel.Timeout) {
	now := time.Now()
	if d := to.Deadline().Sub(now); d > 0 {
		p.early.Store(int64(d))
	}
	if d := p.earliest.Sub(now); d > 0 {
		p.early.Store(max(p.early.Load(), int64(d)))
	}
	p.runs.Add(1)
	if p.fired != nil {
		p.fired <- p
	}
}

// schedule makes a probe due after delay, reporting to fired.
func schedule(t *testing.T, tm hashedwheel.Timer, delay time.Duration, fired chan<- *probe) (*probe, hashedwheel.Timeout) {
	p := &probe{earliest: time.Now().Add(delay), fired: fired}
	to, err := tm.NewTimeout(p, delay)
	if err != nil {
		t.Fatalf("NewTimeout(%v): %v", delay, err)
	}
	return p, to
}

// receive waits for n probes on fired.
func receive(t *testing.T, fired <-chan *probe, n int) {
	t.Helper()
	deadline := time.After(patience)
	for i := range n {
		select {
		case <-fired:
		case <-deadline:
			t.Fatalf("only %d of %d timeouts fired within %v", i, n, patience)
		}
	}
}

// testNeverEarlyExactlyOnce schedules timeouts from several goroutines
// while others cancel a third of them, racing their expiry. Each must end
// exactly one way, and none may run before its deadline.
func testNeverEarlyExactlyOnce(t *testing.T, tm hashedwheel.Timer) {
	const producers, perProducer = 4, 500
	const total = producers * perProducer
	fired := make(chan *probe, total)
	probes := make([]*probe, total)
	timeouts := make([]hashedwheel.Timeout, total)
	cancelled := make([]bool, total)

	var wg sync.WaitGroup
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := g * perProducer; i < (g+1)*perProducer; i++ {
				delay := time.Duration(rng.Int64N(int64(20 * time.Millisecond)))
				probes[i], timeouts[i] = schedule(t, tm, delay, fired)
			}
		}()
	}
	wg.Wait()
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < total; i += 3 * producers {
				cancelled[i] = timeouts[i].Cancel()
			}
		}()
	}
	wg.Wait()

	n := 0
	for _, c := range cancelled {
		if c {
			n++
		}
	}
	receive(t, fired, total-n)
	if rest := tm.Stop(); len(rest) != 0 {
		t.Fatalf("Stop returned %d timeouts after all had fired or been cancelled", len(rest))
	}
	for i, p := range probes {
		runs := p.runs.Load()
		switch {
		case p.early.Load() > 0:
			t.Errorf("timeout %d ran %v before its deadline", i, time.Duration(p.early.Load()))
		case cancelled[i] && runs != 0:
			t.Errorf("timeout %d ran %d times after a successful Cancel", i, runs)
		case !cancelled[i] && runs != 1:
			t.Errorf("timeout %d, not cancelled, ran %d times", i, runs)
		case cancelled[i] && !timeouts[i].IsCancelled(), !cancelled[i] && !timeouts[i].IsExpired():
			t.Errorf("timeout %d: cancelled=%v but IsCancelled=%v IsExpired=%v",
				i, cancelled[i], timeouts[i].IsCancelled(), timeouts[i].IsExpired())
		}
	}
}

// testCancelFromManyGoroutines lets eight goroutines cancel the same
// timeouts: exactly one Cancel per timeout succeeds.
func testCancelFromManyGoroutines(t *testing.T, tm hashedwheel.Timer) {
	const n, cancellers = 500, 8
	timeouts := make([]hashedwheel.Timeout, n)
	probes := make([]*probe, n)
	for i := range timeouts {
		probes[i], timeouts[i] = schedule(t, tm, time.Hour, nil)
	}
	var wins [n]atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range cancellers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for k := range n {
				i := (k*7 + g*61) % n // each goroutine in its own order
				if timeouts[i].Cancel() {
					wins[i].Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if w := wins[i].Load(); w != 1 {
			t.Errorf("timeout %d: %d successful Cancels, want 1", i, w)
		}
		if !timeouts[i].IsCancelled() || timeouts[i].IsExpired() {
			t.Errorf("timeout %d: IsCancelled=%v IsExpired=%v after Cancel", i, timeouts[i].IsCancelled(), timeouts[i].IsExpired())
		}
	}
	if rest := tm.Stop(); len(rest) != 0 {
		t.Fatalf("Stop returned %d cancelled timeouts", len(rest))
	}
	for i, p := range probes {
		if p.runs.Load() != 0 {
			t.Errorf("cancelled timeout %d ran", i)
		}
	}
}

// testStopReturnsExactlyPending checks that Stop returns the timeouts that
// neither fired nor were cancelled, each once and now cancelled.
func testStopReturnsExactlyPending(t *testing.T, tm hashedwheel.Timer) {
	const short, long, cancel = 300, 300, 100
	fired := make(chan *probe, short)
	for range short {
		schedule(t, tm, time.Duration(rand.Int64N(int64(5*time.Millisecond))), fired)
	}
	pending := map[hashedwheel.Timeout]*probe{}
	var cancelledOnes []hashedwheel.Timeout
	for i := range long {
		p, to := schedule(t, tm, time.Hour+time.Duration(i)*time.Millisecond, nil)
		if i < cancel {
			if !to.Cancel() {
				t.Fatal("Cancel of a pending timeout failed")
			}
			cancelledOnes = append(cancelledOnes, to)
			continue
		}
		pending[to] = p
	}
	receive(t, fired, short)

	rest := tm.Stop()
	if len(rest) != len(pending) {
		t.Fatalf("Stop returned %d timeouts, want the %d pending ones", len(rest), len(pending))
	}
	seen := map[hashedwheel.Timeout]bool{}
	for _, to := range rest {
		if _, ok := pending[to]; !ok {
			t.Fatalf("Stop returned a timeout that was not pending (cancelled %v, expired %v)", to.IsCancelled(), to.IsExpired())
		}
		if seen[to] {
			t.Fatal("Stop returned a timeout twice")
		}
		seen[to] = true
		if !to.IsCancelled() || to.Cancel() {
			t.Fatal("a timeout returned by Stop is not cancelled")
		}
	}
	for _, to := range cancelledOnes {
		if to.Cancel() {
			t.Fatal("a cancelled timeout was cancelled again")
		}
	}
	if again := tm.Stop(); again != nil {
		t.Fatalf("second Stop returned %d timeouts", len(again))
	}
	for _, p := range pending {
		if p.runs.Load() != 0 {
			t.Fatal("a timeout returned by Stop ran")
		}
	}
}

// testStopRacesNewTimeout stops the timer while producers keep scheduling:
// every accepted timeout either fired or is in Stop's result, exactly once,
// and every rejected one fails with ErrStopped and never runs.
func testStopRacesNewTimeout(t *testing.T, tm hashedwheel.Timer) {
	const producers = 4
	type accepted struct {
		p  *probe
		to hashedwheel.Timeout
	}
	var (
		mu       sync.Mutex
		all      []accepted
		count    atomic.Int64
		enough   = make(chan struct{})
		signaled sync.Once
		wg       sync.WaitGroup
	)
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for {
				delay := time.Hour
				if rng.IntN(2) == 0 {
					delay = time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
				}
				p := &probe{earliest: time.Now().Add(delay)}
				to, err := tm.NewTimeout(p, delay)
				if err != nil {
					if !errors.Is(err, hashedwheel.ErrStopped) {
						t.Errorf("NewTimeout: %v, want ErrStopped", err)
					}
					return
				}
				mu.Lock()
				all = append(all, accepted{p, to})
				mu.Unlock()
				if count.Add(1) >= 2000 {
					signaled.Do(func() { close(enough) })
				}
			}
		}()
	}
	<-enough
	rest := tm.Stop() // with the inline executor, no task runs after this
	wg.Wait()

	inRest := map[hashedwheel.Timeout]int{}
	for _, to := range rest {
		inRest[to]++
	}
	for _, a := range all {
		runs, returned := a.p.runs.Load(), inRest[a.to]
		if runs+int32(returned) != 1 || a.p.early.Load() > 0 {
			t.Fatalf("accepted timeout ran %d times (early by %v) and was returned by Stop %d times",
				runs, time.Duration(a.p.early.Load()), returned)
		}
		delete(inRest, a.to)
	}
	if len(inRest) != 0 {
		t.Fatalf("Stop returned %d timeouts that NewTimeout never returned", len(inRest))
	}
}

func testErrors(t *testing.T, tm hashedwheel.Timer) {
	if _, err := tm.NewTimeout(nil, time.Second); !errors.Is(err, hashedwheel.ErrNilTask) {
		t.Errorf("NewTimeout(nil): %v, want ErrNilTask", err)
	}
	var nilFunc hashedwheel.TaskFunc
	if _, err := tm.NewTimeout(nilFunc, time.Second); !errors.Is(err, hashedwheel.ErrNilTask) {
		t.Errorf("NewTimeout(nil TaskFunc): %v, want ErrNilTask", err)
	}
	p := &probe{}
	if _, err := tm.NewTimeout(p, time.Hour); err != nil {
		t.Fatal(err)
	}
	if rest := tm.Stop(); len(rest) != 1 {
		t.Fatalf("Stop returned %d timeouts, want 1", len(rest))
	}
	if rest := tm.Stop(); rest != nil {
		t.Errorf("second Stop returned %v, want nil", rest)
	}
	if _, err := tm.NewTimeout(p, time.Millisecond); !errors.Is(err, hashedwheel.ErrStopped) {
		t.Errorf("NewTimeout after Stop: %v, want ErrStopped", err)
	}
}

// testTaskSchedulesAndStops runs, on the timer's own goroutine, a task that
// schedules another and a task that stops the timer.
func testTaskSchedulesAndStops(t *testing.T, tm hashedwheel.Timer) {
	second := make(chan *probe, 1)
	_, err := tm.NewTimeout(hashedwheel.TaskFunc(func(hashedwheel.Timeout) {
		schedule(t, tm, time.Millisecond, second)
	}), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	receive(t, second, 1)

	stopFromTask(t, tm)
	if rest := tm.Stop(); rest != nil {
		t.Fatalf("Stop after a task's Stop returned %d timeouts", len(rest))
	}
}

func testPanicIsContained(t *testing.T, tm hashedwheel.Timer) {
	if _, err := tm.NewTimeout(hashedwheel.TaskFunc(func(hashedwheel.Timeout) {
		panic("task panics on purpose")
	}), 0); err != nil {
		t.Fatal(err)
	}
	fired := make(chan *probe, 1)
	schedule(t, tm, 2*time.Millisecond, fired)
	receive(t, fired, 1)
}

// hooked is a task with a Cancelled hook.
type hooked struct {
	probe
	hooks chan hashedwheel.Timeout
}

func (h *hooked) Cancelled(to hashedwheel.Timeout) { h.hooks <- to }

func testCancelledHook(t *testing.T, tm hashedwheel.Timer) {
	task := &hooked{hooks: make(chan hashedwheel.Timeout, 2)}
	to, err := tm.NewTimeout(task, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !to.Cancel() || to.Cancel() {
		t.Fatal("want exactly one successful Cancel")
	}
	select {
	case got := <-task.hooks:
		if got != to {
			t.Fatal("Cancelled hook got another timeout")
		}
	case <-time.After(patience):
		t.Fatal("Cancelled hook not called")
	}
	fired := make(chan *probe, 1)
	expiring := &hooked{probe: probe{fired: fired}, hooks: task.hooks}
	if _, err := tm.NewTimeout(expiring, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	receive(t, fired, 1)
	stopped := &hooked{hooks: task.hooks}
	if _, err := tm.NewTimeout(stopped, time.Hour); err != nil {
		t.Fatal(err)
	}
	tm.Stop()
	select {
	case <-task.hooks:
		t.Fatal("Cancelled hook called again, for an expired or stopped timeout")
	default:
	}
}

func testAccessors(t *testing.T, tm hashedwheel.Timer) {
	const delay = 50 * time.Millisecond
	task := &probe{}
	before := time.Now()
	to, err := tm.NewTimeout(task, delay)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if to.Timer() != tm || to.Task() != task {
		t.Error("Timer() or Task() does not return the timer and task")
	}
	// A millisecond of slack: a timer may read its clock a little apart
	// from ours.
	if d := to.Deadline(); d.Before(before.Add(delay-time.Millisecond)) || d.After(after.Add(delay+time.Millisecond)) {
		t.Errorf("Deadline %v not within [%v, %v] + %v", d, before, after, delay)
	}
	if to.IsExpired() || to.IsCancelled() {
		t.Error("a new timeout reports expired or cancelled")
	}
	tm.Stop()
}
