package timertest

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// The Reset cases run on the inline executor where they rely on order: the
// worker runs tasks due earlier first, so once a sentinel due later has
// run, a task that was due at an earlier instant has run too, or never
// will at that instant.

// stamp is a task that sends the instant it ran.
type stamp chan time.Time

func (s stamp) Run(hashedwheel.Timeout) { s <- time.Now() }

// awaitStamp waits for s within patience.
func awaitStamp(t *testing.T, s stamp, what string) time.Time {
	t.Helper()
	select {
	case at := <-s:
		return at
	case <-time.After(patience):
		t.Fatalf("%s did not fire within %v", what, patience)
		return time.Time{}
	}
}

// sentinel schedules a probe after delay and waits for it to fire.
func sentinel(t *testing.T, tm hashedwheel.Timer, delay time.Duration) {
	t.Helper()
	fired := make(chan *probe, 1)
	schedule(t, tm, delay, fired)
	receive(t, fired, 1)
}

// testResetLater moves a timeout later: it does not fire at its old
// deadline, fires after its new one, and Deadline tells the new one.
func testResetLater(t *testing.T, tm hashedwheel.Timer) {
	const old, moved = 5 * time.Millisecond, 200 * time.Millisecond
	ran := make(stamp, 1)
	to, err := tm.NewTimeout(ran, old)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if !to.Reset(moved) {
		t.Fatal("Reset of a pending timeout returned false")
	}
	after := time.Now()
	// The timer's clock may be read a little apart from ours, as in
	// testAccessors.
	if d := to.Deadline(); d.Before(before.Add(moved-time.Millisecond)) || d.After(after.Add(moved+time.Millisecond)) {
		t.Errorf("Deadline %v after Reset(%v) not within [%v, %v] + %v", d, moved, before, after, moved)
	}
	sentinel(t, tm, 10*old)
	select {
	case at := <-ran:
		t.Fatalf("a timeout moved %v later fired %v after the Reset, near its old deadline", moved, at.Sub(before))
	default:
	}
	if at := awaitStamp(t, ran, "the moved timeout"); at.Before(before.Add(moved)) {
		t.Fatalf("a timeout moved to %v fired %v early", moved, before.Add(moved).Sub(at))
	}
	if !to.IsExpired() || to.Reset(moved) {
		t.Fatal("the moved timeout is not expired, or can be reset, after it fired")
	}
}

// testResetEarlier moves a timeout an hour away to a few milliseconds: it
// fires then, not before, so the worker sleeping for an hour was woken.
func testResetEarlier(t *testing.T, tm hashedwheel.Timer) {
	const moved = 10 * time.Millisecond
	ran := make(stamp, 1)
	to, err := tm.NewTimeout(ran, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if !to.Reset(moved) {
		t.Fatal("Reset of a pending timeout returned false")
	}
	if at := awaitStamp(t, ran, "a timeout moved from 1h to 10ms"); at.Before(before.Add(moved)) {
		t.Fatalf("a timeout moved to %v fired %v early", moved, before.Add(moved).Sub(at))
	}
}

// testResetAfterEnd resets timeouts that expired, were cancelled, or were
// returned by Stop: Reset returns false and changes nothing.
func testResetAfterEnd(t *testing.T, tm hashedwheel.Timer) {
	fired := make(chan *probe, 1)
	expired, expiredTo := schedule(t, tm, time.Millisecond, fired)
	receive(t, fired, 1)
	if expiredTo.Reset(time.Millisecond) {
		t.Error("Reset of an expired timeout returned true")
	}
	cancelled, cancelledTo := schedule(t, tm, time.Hour, nil)
	if !cancelledTo.Cancel() {
		t.Fatal("Cancel of a pending timeout failed")
	}
	if cancelledTo.Reset(time.Millisecond) {
		t.Error("Reset of a cancelled timeout returned true")
	}
	sentinel(t, tm, 20*time.Millisecond) // a wrongly re-armed one would have run by now
	if runs := expired.runs.Load(); runs != 1 || !expiredTo.IsExpired() {
		t.Errorf("the expired timeout ran %d times after Reset (expired %v)", runs, expiredTo.IsExpired())
	}
	if runs := cancelled.runs.Load(); runs != 0 || !cancelledTo.IsCancelled() {
		t.Errorf("the cancelled timeout ran %d times after Reset (cancelled %v)", runs, cancelledTo.IsCancelled())
	}

	_, pendingTo := schedule(t, tm, time.Hour, nil)
	if rest := tm.Stop(); len(rest) != 1 || rest[0] != pendingTo {
		t.Fatalf("Stop returned %d timeouts, want the one pending", len(rest))
	}
	if pendingTo.Reset(time.Millisecond) || !pendingTo.IsCancelled() {
		t.Error("Reset of a timeout returned by Stop returned true, or un-cancelled it")
	}
}

// resetProbe is a task that records when it ran, and the deadline the last
// successful Reset gave it, which it must not run before.
type resetProbe struct {
	runs   atomic.Int32
	ranAt  atomic.Int64 // UnixNano
	cancel atomic.Int32 // successful Cancels
	fired  chan<- struct{}
	// resetting serialises the test's Resets of this timeout, so that the
	// last one to succeed is the one whose deadline counts: two Resets
	// racing each other may take effect in either order.
	resetting sync.Mutex
	bound     atomic.Int64 // UnixNano: call start + delay of the last Reset that returned true
}

func (p *resetProbe) Run(hashedwheel.Timeout) {
	p.ranAt.Store(time.Now().UnixNano())
	p.runs.Add(1)
	p.fired <- struct{}{}
}

// testResetRaces resets timeouts from several goroutines while others
// cancel them and the timer expires them. Each must end exactly one way,
// never run before the deadline its last successful Reset gave it, and a
// Reset must fail once it ran.
func testResetRaces(t *testing.T, tm hashedwheel.Timer) {
	const n, resetters, resetsEach, cancellers = 1000, 4, 3000, 2
	// Scheduled up to 30ms away and reset to at most 3ms away: most are
	// pending when the resets begin, and expire while they go on.
	const firstDelay, maxDelay = int64(30 * time.Millisecond), int64(3 * time.Millisecond)
	fired := make(chan struct{}, n)
	probes := make([]*resetProbe, n)
	timeouts := make([]hashedwheel.Timeout, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range probes {
		probes[i] = &resetProbe{fired: fired}
		delay := time.Duration(rng.Int64N(firstDelay))
		probes[i].bound.Store(time.Now().Add(delay).UnixNano())
		to, err := tm.NewTimeout(probes[i], delay)
		if err != nil {
			t.Fatal(err)
		}
		timeouts[i] = to
	}
	var moved atomic.Int64
	var wg sync.WaitGroup
	for g := range resetters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for range resetsEach {
				i := rng.IntN(n)
				delay := rng.Int64N(maxDelay)
				p := probes[i]
				p.resetting.Lock()
				start := time.Now().UnixNano()
				if timeouts[i].Reset(time.Duration(delay)) {
					p.bound.Store(start + delay)
					moved.Add(1)
				}
				p.resetting.Unlock()
			}
		}()
	}
	for g := range cancellers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 5 {
				if timeouts[i].Cancel() {
					probes[i].cancel.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if moved.Load() == 0 {
		t.Fatal("no Reset succeeded: the case tested nothing")
	}
	cancelled := 0
	for _, p := range probes {
		cancelled += int(p.cancel.Load())
	}
	deadline := time.After(patience)
	for i := range n - cancelled {
		select {
		case <-fired:
		case <-deadline:
			t.Fatalf("only %d of the %d timeouts not cancelled fired within %v", i, n-cancelled, patience)
		}
	}
	if rest := tm.Stop(); len(rest) != 0 {
		t.Fatalf("Stop returned %d timeouts after every one had fired or been cancelled", len(rest))
	}
	for i, p := range probes {
		runs, cancels := p.runs.Load(), p.cancel.Load()
		switch {
		case runs+cancels != 1:
			t.Errorf("timeout %d ran %d times and was cancelled %d times", i, runs, cancels)
		case runs == 1 && p.ranAt.Load() < p.bound.Load():
			t.Errorf("timeout %d ran %v before the deadline a successful Reset gave it (or was reset after it ran)",
				i, time.Duration(p.bound.Load()-p.ranAt.Load()))
		}
	}
}
