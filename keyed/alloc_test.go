package keyed

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Moving a deadline, and setting a key already in the set, allocate
// nothing; a new key costs the timer's timeout, and its entry unless one is
// reused; Remove allocates nothing.
func TestAllocations(t *testing.T) {
	h, _ := newFakeTimer(t)
	set, err := New(h, func(uint64, *int) {})
	require.NoError(t, err)
	value := new(int)
	require.NoError(t, set.Set(1, value, time.Hour))

	assert.Zero(t, testing.AllocsPerRun(1000, func() { set.Move(1, time.Hour) }), "Move")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = set.Set(1, value, time.Hour) }), "Set of a key in the set")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { set.Get(1); set.Pending(1); set.Move(2, time.Hour) }), "Get, Pending, Move of a key not in the set")
	assert.Equal(t, 1.0, testing.AllocsPerRun(1000, func() {
		_ = set.Set(2, value, time.Hour)
		set.Remove(2)
	}), "Set of a new key, then Remove: the entry is reused")
	assert.Equal(t, 2.0, testing.AllocsPerRun(100, func() {
		s := set.shardFor(3)
		s.mu.Lock()
		clear(s.free)
		s.free = s.free[:0]
		s.mu.Unlock()
		_ = set.Set(3, value, time.Hour)
		set.Remove(3)
	}), "Set of a new key with no entry to reuse")

	// A key holding a pointer hashes without escaping.
	type conn struct{ id *int }
	byConn, err := New(h, func(conn, int) {})
	require.NoError(t, err)
	c := conn{value}
	require.NoError(t, byConn.Set(c, 1, time.Hour))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { byConn.Move(c, time.Hour) }), "Move of a key holding a pointer")
}

// An entry kept for reuse holds neither its key nor its value, and a shard
// keeps a bounded number of them.
func TestEntriesKeptForReuseHoldNothing(t *testing.T) {
	set, _, _, _ := newRecorded(t)
	for i := range 10 * maxFree * len(set.shards) {
		key := fmt.Sprint("key-", i)
		require.NoError(t, set.Set(key, i+1, time.Hour))
		set.Remove(key)
	}
	kept := 0
	for i := range set.shards {
		s := &set.shards[i]
		s.mu.Lock()
		assert.LessOrEqual(t, len(s.free), maxFree)
		for _, e := range s.free {
			assert.Zero(t, e.key)
			assert.Zero(t, e.value)
			assert.Nil(t, e.timeout)
			assert.Same(t, s, e.shard)
		}
		kept += len(s.free)
		s.mu.Unlock()
	}
	assert.NotZero(t, kept)
}
