package hashedwheel

import (
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

// newFakeTimer returns a started timer on a fake clock, with tasks run
// inline on the worker, so that after fake.Settle every due task has run.
// The timer is stopped when the test ends.
func newFakeTimer(tb testing.TB, opts ...Option) (*HashedWheelTimer, *clock.Fake) {
	tb.Helper()
	fake := clock.NewFake(0)
	opts = append([]Option{
		WithTickDuration(testTick),
		WithExecutor(pool.Inline),
		withClock(fake),
	}, opts...)
	h, err := New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Stop() })
	fake.Settle()
	return h, fake
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
