package keyed

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

func TestNewRefusesNilArguments(t *testing.T) {
	h, _ := newFakeTimer(t)
	_, err := New[string, int](nil, func(string, int) {})
	require.ErrorIs(t, err, ErrNilTimer)
	var typedNil *hashedwheel.HashedWheelTimer
	_, err = New[string, int](typedNil, func(string, int) {})
	require.ErrorIs(t, err, ErrNilTimer)
	_, err = New[string, int](h, nil)
	require.ErrorIs(t, err, hashedwheel.ErrNilTask)
	require.Contains(t, err.Error(), "nil expiry function")
}

func TestSetExpiresAtTheDeadlineWithKeyAndValue(t *testing.T) {
	set, rec, fake, _ := newRecorded(t)
	require.NoError(t, set.Set("a", 1, 100*time.Millisecond))
	require.NoError(t, set.Set("b", 2, 200*time.Millisecond))
	assert.True(t, set.Pending("a"))
	assert.Equal(t, 2, set.Len())

	fake.Advance(100*time.Millisecond - time.Nanosecond)
	assert.Empty(t, rec.calls(), "expired before its deadline")
	fake.Advance(time.Nanosecond) // a's deadline, the end of the tick that covers it
	require.Equal(t, []expiry[string, int]{{"a", 1, 100 * time.Millisecond}}, rec.calls())
	assert.False(t, set.Pending("a"), "an expired key left the set")
	assert.True(t, set.Pending("b"))
	assert.Equal(t, 1, set.Len())

	fake.Advance(time.Second)
	calls := rec.calls()
	require.Len(t, calls, 2)
	assert.Equal(t, "b", calls[1].key)
	assert.Equal(t, 2, calls[1].value)
	assert.GreaterOrEqual(t, calls[1].at, 200*time.Millisecond)
	assert.Zero(t, set.Len())
}

func TestSetOfAKeyInTheSetReplacesValueAndDeadline(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	require.NoError(t, set.Set("a", 1, 100*time.Millisecond))
	fake.Advance(50 * time.Millisecond)
	require.NoError(t, set.Set("a", 2, 100*time.Millisecond)) // now due at 150ms
	assert.Equal(t, 1, set.Len())
	v, ok := set.Get("a")
	assert.True(t, ok)
	assert.Equal(t, 2, v)

	fake.Advance(90 * time.Millisecond) // 140ms: past the first deadline
	assert.Empty(t, rec.calls(), "the replaced deadline fired")
	fake.Advance(time.Second)
	calls := rec.calls()
	require.Len(t, calls, 1, "one entry, one expiry")
	assert.Equal(t, "a", calls[0].key)
	assert.Equal(t, 2, calls[0].value)
	assert.GreaterOrEqual(t, calls[0].at, 150*time.Millisecond)
	// The key kept its timeout: one scheduled, moved once.
	s := h.Stats()
	assert.Equal(t, uint64(1), s.Scheduled)
	assert.Equal(t, uint64(1), s.Resets)
}

func TestSetCanMoveADeadlineEarlier(t *testing.T) {
	set, rec, fake, _ := newRecorded(t)
	require.NoError(t, set.Set("a", 1, time.Hour))
	require.NoError(t, set.Set("a", 2, 30*time.Millisecond))
	fake.Advance(50 * time.Millisecond)
	calls := rec.calls()
	require.Len(t, calls, 1)
	assert.Equal(t, 2, calls[0].value)
	assert.GreaterOrEqual(t, calls[0].at, 30*time.Millisecond)
}

func TestMoveChangesTheDeadlineAndReturnsTheValue(t *testing.T) {
	set, rec, fake, _ := newRecorded(t)
	require.NoError(t, set.Set("later", 1, 100*time.Millisecond))
	require.NoError(t, set.Set("sooner", 2, time.Hour))
	fake.Advance(80 * time.Millisecond)

	v, ok := set.Move("later", 100*time.Millisecond) // due at 180ms
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	v, ok = set.Move("sooner", 20*time.Millisecond) // due at 100ms
	assert.True(t, ok)
	assert.Equal(t, 2, v)

	fake.Advance(90 * time.Millisecond) // 170ms
	calls := rec.calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "sooner", calls[0].key)
	assert.GreaterOrEqual(t, calls[0].at, 100*time.Millisecond)
	fake.Advance(100 * time.Millisecond)
	calls = rec.calls()
	require.Len(t, calls, 2)
	assert.Equal(t, "later", calls[1].key)
	assert.GreaterOrEqual(t, calls[1].at, 180*time.Millisecond)
}

func TestMoveOfAKeyNotInTheSetChangesNothing(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	v, ok := set.Move("a", time.Millisecond)
	assert.False(t, ok)
	assert.Zero(t, v)
	assert.False(t, set.Pending("a"))
	fake.Advance(time.Second)
	assert.Empty(t, rec.calls())
	assert.Zero(t, h.Stats().Scheduled)
}

func TestRemoveReturnsTheValueAndTheKeyNeverExpires(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	require.NoError(t, set.Set("a", 1, 100*time.Millisecond))
	require.NoError(t, set.Set("b", 2, 100*time.Millisecond))
	v, ok := set.Remove("a")
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	assert.False(t, set.Pending("a"))
	v, ok = set.Remove("a")
	assert.False(t, ok, "a second Remove")
	assert.Zero(t, v)

	fake.Advance(time.Second)
	calls := rec.calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "b", calls[0].key)
	_, ok = set.Remove("b")
	assert.False(t, ok, "Remove of an expired key")
	assert.Equal(t, uint64(1), h.Stats().Cancelled, "Remove cancels the key's timeout")
	assert.Zero(t, h.PendingTimeouts())
}

func TestGetAndPendingLeaveTheDeadline(t *testing.T) {
	set, rec, fake, _ := newRecorded(t)
	_, ok := set.Get("a")
	assert.False(t, ok)
	require.NoError(t, set.Set("a", 7, 50*time.Millisecond))
	for range 3 {
		v, ok := set.Get("a")
		assert.True(t, ok)
		assert.Equal(t, 7, v)
		assert.True(t, set.Pending("a"))
	}
	fake.Advance(60 * time.Millisecond)
	require.Len(t, rec.calls(), 1)
	_, ok = set.Get("a")
	assert.False(t, ok)
}

func TestZeroAndNegativeDelaysExpireAtTheNextTick(t *testing.T) {
	set, rec, fake, _ := newRecorded(t)
	require.NoError(t, set.Set("zero", 1, 0))
	require.NoError(t, set.Set("negative", 2, -time.Hour))
	fake.Advance(tick)
	assert.Len(t, rec.calls(), 2)
	assert.Zero(t, set.Len())
}

func TestLenCountsEveryShard(t *testing.T) {
	set, rec, fake, _ := newRecorded(t)
	n := 64 * len(set.shards) // enough for every shard to get keys
	for i := range n {
		require.NoError(t, set.Set(fmt.Sprint("key-", i), i, time.Duration(1+i%5)*100*time.Millisecond))
	}
	require.Equal(t, n, set.Len())
	used := 0
	for i := range set.shards {
		if len(set.shards[i].m) > 0 {
			used++
		}
	}
	assert.Equal(t, len(set.shards), used, "%d keys leave a shard empty: the hash does not spread them", n)
	fake.Advance(300 * time.Millisecond)
	assert.Equal(t, n-len(rec.calls()), set.Len())
	fake.Advance(time.Second)
	assert.Len(t, rec.calls(), n)
	assert.Zero(t, set.Len())
}

func TestShardCountGrowsWithTheProcessors(t *testing.T) {
	for _, c := range []struct{ procs, want int }{{1, 16}, {2, 16}, {4, 16}, {5, 32}, {16, 64}, {1000, 4096}, {1 << 20, 1 << 16}} {
		assert.Equal(t, c.want, shardCount(c.procs), "GOMAXPROCS %d", c.procs)
	}
}

// A struct key and a pointer value work as any comparable key and any
// value do.
func TestStructKeys(t *testing.T) {
	type conn struct {
		ip   [4]byte
		port uint16
	}
	type session struct{ user string }
	h, fake := newFakeTimer(t)
	var expired []string
	set, err := New(h, func(c conn, s *session) { expired = append(expired, s.user) })
	require.NoError(t, err)
	require.NoError(t, set.Set(conn{[4]byte{10, 0, 0, 1}, 80}, &session{"ann"}, 50*time.Millisecond))
	require.NoError(t, set.Set(conn{[4]byte{10, 0, 0, 1}, 81}, &session{"bob"}, time.Hour))
	s, ok := set.Get(conn{[4]byte{10, 0, 0, 1}, 81})
	require.True(t, ok)
	assert.Equal(t, "bob", s.user)
	fake.Advance(100 * time.Millisecond)
	fake.Settle()
	assert.Equal(t, []string{"ann"}, expired)
}

// The timer's errors reach the caller with errors.Is.
func TestSetWrapsTheTimersErrors(t *testing.T) {
	set, _, fake, h := newRecorded(t, hashedwheel.WithMaxPendingTimeouts(2))
	require.NoError(t, set.Set("a", 1, time.Hour))
	require.NoError(t, set.Set("b", 2, time.Hour))
	err := set.Set("c", 3, time.Hour)
	require.ErrorIs(t, err, hashedwheel.ErrTooManyPendingTimeouts)
	assert.True(t, errors.Is(err, hashedwheel.ErrTooManyPendingTimeouts))
	assert.Contains(t, err.Error(), "keyed: set")
	assert.False(t, set.Pending("c"), "a refused Set added its key")
	assert.Equal(t, 2, set.Len())
	// A key already in the set keeps its timeout: no new place is needed.
	require.NoError(t, set.Set("a", 10, 2*time.Hour))
	v, _ := set.Get("a")
	assert.Equal(t, 10, v)
	// Removing a key frees its place once the timer has processed the cancel.
	set.Remove("b")
	fake.Advance(tick)
	require.Equal(t, int64(1), h.PendingTimeouts())
	require.NoError(t, set.Set("c", 3, time.Hour))
}
