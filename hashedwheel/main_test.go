package hashedwheel

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wheeltimer/wheeltimer/internal/clock"
	"github.com/wheeltimer/wheeltimer/pool"
)

// TestMain fails the package if any test leaves a goroutine behind. The
// ants package starts a default pool of its own when it is imported; its two
// goroutines are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakOptions()...)
}

func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	}
}

// testTick is the tick of timers driven by a fake clock.
const testTick = 10 * time.Millisecond

// startTimer returns a timer made with opts and started; it is stopped
// when the test ends.
func startTimer(tb testing.TB, opts ...Option) *HashedWheelTimer {
	tb.Helper()
	h, err := New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Stop() })
	return h
}

// newFakeTimer returns a started timer on a fake clock, with tasks run
// inline on the worker, so that after fake.Settle every due task has run.
// The timer is stopped when the test ends.
func newFakeTimer(tb testing.TB, opts ...Option) (*HashedWheelTimer, *clock.Fake) {
	tb.Helper()
	fake := clock.NewFake(0)
	h := startTimer(tb, append([]Option{
		WithTickDuration(testTick),
		WithExecutor(pool.Inline),
		withClock(fake),
	}, opts...)...)
	fake.Settle()
	return h, fake
}

// settleWithin waits for the worker to fall asleep, as fake.Settle does,
// but fails the test instead of hanging if it has not within bound: a
// worker that busy-loops without sleeping is a bug, not a reason to hang
// the suite.
func settleWithin(tb testing.TB, fake *clock.Fake, h *HashedWheelTimer, bound time.Duration) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		fake.Settle()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(bound):
	}
	msg := fmt.Sprintf("the worker did not fall asleep within %v: it busy-loops (fake clock %d, stats %+v)",
		bound, fake.Now(), h.Stats())
	// Stop ends the worker's loop, which releases the sleeper and Settle.
	h.Stop()
	<-done
	tb.Fatal(msg)
}

// advance waits for the worker to take in what was just scheduled, then
// moves the fake clock forward by d, one tick at a time so that each tick
// is processed at its own instant, waiting for the worker after each.
func advance(fake *clock.Fake, d time.Duration) {
	fake.Settle()
	for d > 0 {
		step := min(d, testTick)
		fake.Advance(step)
		fake.Settle()
		d -= step
	}
}

// goExecutor starts a goroutine per task: the executor with no limit.
type goExecutor struct{}

func (goExecutor) Execute(task func()) error {
	go task()
	return nil
}
