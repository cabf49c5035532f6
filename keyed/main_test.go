package keyed

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// The helpers shared by the package's tests.

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// tick is the tick of the timers the tests make.
const tick = 10 * time.Millisecond

// newFakeTimer returns a started timer on a fresh fake clock reading 0,
// with a tick of tick and the timer's own pool; opts override those. It is
// stopped when the test ends.
func newFakeTimer(tb testing.TB, opts ...hashedwheel.Option) (*hashedwheel.HashedWheelTimer, *clock.Fake) {
	tb.Helper()
	fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h, err := hashedwheel.New(append([]hashedwheel.Option{
		hashedwheel.WithTickDuration(tick),
		hashedwheel.WithClock(fake),
	}, opts...)...)
	require.NoError(tb, err)
	require.NoError(tb, h.Start())
	tb.Cleanup(func() { h.Stop() })
	fake.Settle()
	return h, fake
}

// expiry is one call of an expiry function: the key, the value and the
// fake clock's Nanotime when it ran.
type expiry[K comparable, V any] struct {
	key   K
	value V
	at    time.Duration
}

// recorder records the calls of an expiry function.
type recorder[K comparable, V any] struct {
	fake *clock.Fake
	mu   sync.Mutex
	got  []expiry[K, V]
}

func (r *recorder[K, V]) expire(key K, value V) {
	at := time.Duration(r.fake.Nanotime())
	r.mu.Lock()
	r.got = append(r.got, expiry[K, V]{key, value, at})
	r.mu.Unlock()
}

// calls returns the calls recorded so far.
func (r *recorder[K, V]) calls() []expiry[K, V] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]expiry[K, V](nil), r.got...)
}

// newRecorded returns a set on a new fake timer whose expiry function
// records its calls.
func newRecorded(tb testing.TB, opts ...hashedwheel.Option) (*Timers[string, int], *recorder[string, int], *clock.Fake, *hashedwheel.HashedWheelTimer) {
	tb.Helper()
	h, fake := newFakeTimer(tb, opts...)
	r := &recorder[string, int]{fake: fake}
	set, err := New(h, r.expire)
	require.NoError(tb, err)
	return set, r, fake, h
}

// now returns the fake clock's Nanotime as a Duration.
func now(fake *clock.Fake) time.Duration { return time.Duration(fake.Nanotime()) }
