package clockwork_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// steppedFake is a custom clock as a user writes one: a Fake whose Now
// reads an hour back.
type steppedFake struct{ *clock.Fake }

func (c steppedFake) Now() time.Time { return c.Fake.Now().Add(-time.Hour) }

// wrapping is a clock that wraps its sleepers, counting their sleeps.
type wrapping struct {
	*clock.Fake
	sleeps int
}

func (c *wrapping) WrapSleeper(s clockwork.Sleeper) clockwork.Sleeper {
	return countingSleeper{s, c}
}

type countingSleeper struct {
	clockwork.Sleeper
	c *wrapping
}

func (s countingSleeper) Sleep(until int64) {
	s.c.sleeps++
	s.Sleeper.Sleep(until)
}

// TestNewSleeperOfAnEmbeddingClockIsItsFakes: a clock that embeds a Fake
// gets the Fake's sleeper, which the Fake's Advance drives and which
// shows the timer to the Fake, as a timer on the Fake itself would.
func TestNewSleeperOfAnEmbeddingClockIsItsFakes(t *testing.T) {
	c := steppedFake{clock.NewFake(time.Now())}
	s := clockwork.NewSleeper(c)
	_, watcher := s.(clockwork.Watcher)
	_, tracker := s.(clockwork.WorkTracker)
	assert.True(t, watcher && tracker, "a Fake's sleeper, %T", s)

	slept := make(chan struct{})
	go func() {
		defer close(slept)
		defer s.Close() // a worker that ends detaches its sleeper: Advance waits for no one
		for c.Nanotime() < int64(time.Second) {
			s.Sleep(int64(time.Second))
		}
	}()
	c.WaitAsleep()
	require.Equal(t, int64(time.Second), clockwork.SleepingUntil(c.Fake))
	c.Advance(time.Second)
	<-slept
	assert.Equal(t, clockwork.Forever, clockwork.SleepingUntil(c.Fake), "closed: no sleeper waits")
}

// TestNewSleeperAppliesTheWrapper: a Wrapper's sleepers are the ones it
// returns, around its clock's.
func TestNewSleeperAppliesTheWrapper(t *testing.T) {
	c := &wrapping{Fake: clock.NewFake(time.Now())}
	s := clockwork.NewSleeper(c)
	defer s.Close()
	s.Wake()
	s.Sleep(clockwork.Forever) // the pending wake ends it
	assert.Equal(t, 1, c.sleeps)
}

// TestNewSleeperOfReal: a Real clock's sleeper sleeps on its Nanotime.
func TestNewSleeperOfReal(t *testing.T) {
	r := clock.NewReal()
	s := clockwork.NewSleeper(r)
	defer s.Close()
	_, watcher := s.(clockwork.Watcher)
	assert.False(t, watcher, "only a Fake watches its timers")
	until := r.Nanotime() + int64(time.Millisecond)
	for r.Nanotime() < until {
		s.Sleep(until)
	}
}
