package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// newFakeStore returns a store on a timer on a fake clock, with a tick of
// tick, whose expiries are sent on the returned channel.
func newFakeStore(t *testing.T, ttl, tick time.Duration) (*Store, *clock.Fake, <-chan *Session) {
	t.Helper()
	fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(tick), hashedwheel.WithClock(fake))
	require.NoError(t, err)
	t.Cleanup(func() { timer.Stop() })
	expired := make(chan *Session, 16)
	now := func() time.Duration { return time.Duration(fake.Nanotime()) }
	store, err := NewStore(timer, ttl, now, func(_ string, s *Session) { expired <- s })
	require.NoError(t, err)
	return store, fake, expired
}

// A session read within its time to live stays, however long it lives; it
// expires a time to live after its last read, not after its login.
func TestReadsPushTheExpiryBack(t *testing.T) {
	const ttl, tick = time.Minute, time.Second
	store, fake, expired := newFakeStore(t, ttl, tick)
	id, err := store.Login("ann")
	require.NoError(t, err)
	for range 5 {
		fake.Advance(ttl - tick)
		s, ok := store.Get(id)
		require.True(t, ok, "a session read within its time to live expired")
		assert.Equal(t, "ann", s.User)
	}
	lastRead := time.Duration(fake.Nanotime())
	fake.Advance(ttl - tick)
	require.Empty(t, expired, "expired before a time to live without a read")
	fake.Advance(2 * tick)
	require.Len(t, expired, 1)
	s := <-expired
	assert.Equal(t, "ann", s.User)
	assert.Equal(t, int64(lastRead), s.lastRead.Load())
	_, ok := store.Get(id)
	assert.False(t, ok, "an expired session was found")
	assert.Zero(t, store.Len())
}

func TestLoggedOutSessionsNeverExpire(t *testing.T) {
	store, fake, expired := newFakeStore(t, time.Minute, time.Second)
	id, err := store.Login("bob")
	require.NoError(t, err)
	other, err := store.Login("eve")
	require.NoError(t, err)
	assert.NotEqual(t, id, other, "two sessions got one ID")
	assert.True(t, store.Logout(id))
	assert.False(t, store.Logout(id), "a second logout found the session")
	fake.Advance(time.Hour)
	require.Len(t, expired, 1)
	assert.Equal(t, "eve", (<-expired).User)
}

func TestNewStoreRefusesANonPositiveTTL(t *testing.T) {
	timer, err := hashedwheel.New()
	require.NoError(t, err)
	defer timer.Stop()
	_, err = NewStore(timer, 0, nil, func(string, *Session) {})
	require.Error(t, err)
}

func TestSessionCache(t *testing.T) {
	cfg := config{
		Users:    300,
		Active:   0.5,
		Logout:   0.2,
		TTL:      400 * time.Millisecond,
		Interval: 40 * time.Millisecond, // 10 reads per time to live: a wide margin under -race
		Duration: 800 * time.Millisecond,
		Tick:     5 * time.Millisecond,
	}
	start := time.Now()
	r, err := run(context.Background(), cfg)
	require.NoError(t, err)
	require.NoError(t, r.check())
	assert.Equal(t, [3]int{90, 150, 60}, r.Users)
	assert.Equal(t, [3]int{90, 150, 0}, r.Expired)
	assert.Len(t, r.Lateness, 240)
	assert.GreaterOrEqual(t, r.Reads, int64(150*2), "each active user reads at least at the start and once more")
	assert.Less(t, time.Since(start), cfg.Duration+cfg.TTL+10*time.Second)

	var out bytes.Buffer
	r.print(&out, cfg)
	for _, want := range []string{"300 users logged in", "90 expired", "0 expired", "ok: every unread session expired"} {
		assert.True(t, strings.Contains(out.String(), want), "report lacks %q:\n%s", want, out.String())
	}
}

func TestCheckCatchesFailures(t *testing.T) {
	good := report{Users: [3]int{2, 2, 1}, Expired: [3]int{2, 2, 0}, Lateness: []time.Duration{0, time.Millisecond}}
	require.NoError(t, good.check())
	for _, bad := range []func(r *report){
		func(r *report) { r.Expired[idle] = 1 },
		func(r *report) { r.Expired[active] = 1 },
		func(r *report) { r.ExpiredEarly = 1 },
		func(r *report) { r.Expired[gone] = 1 },
		func(r *report) { r.Missed = 1 },
		func(r *report) { r.LogoutsFailed = 1 },
		func(r *report) { r.Lateness = append(r.Lateness, -time.Millisecond) },
		func(r *report) { r.Leftover = 1 },
	} {
		r := good
		r.Lateness = append([]time.Duration(nil), good.Lateness...)
		bad(&r)
		assert.Error(t, r.check(), "check accepted %+v", r)
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, change := range []func(c *config){
		func(c *config) { c.Users = 0 },
		func(c *config) { c.Active, c.Logout = 0.7, 0.5 },
		func(c *config) { c.Interval = c.TTL },
		func(c *config) { c.TTL = 0 },
	} {
		cfg := defaultConfig()
		change(&cfg)
		_, err := run(context.Background(), cfg)
		assert.Error(t, err, "run accepted %+v", cfg)
	}
}
