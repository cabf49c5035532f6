package keyed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Moving a deadline, and setting a key already in the set, allocate
// nothing; a new key costs its entry and the timer's timeout; Remove
// allocates nothing.
func TestAllocations(t *testing.T) {
	h, _ := newFakeTimer(t)
	set, err := New(h, func(uint64, *int) {})
	require.NoError(t, err)
	value := new(int)
	require.NoError(t, set.Set(1, value, time.Hour))

	assert.Zero(t, testing.AllocsPerRun(1000, func() { set.Move(1, time.Hour) }), "Move")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = set.Set(1, value, time.Hour) }), "Set of a key in the set")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { set.Get(1); set.Pending(1); set.Move(2, time.Hour) }), "Get, Pending, Move of a key not in the set")
	assert.Equal(t, 2.0, testing.AllocsPerRun(1000, func() {
		_ = set.Set(2, value, time.Hour)
		set.Remove(2)
	}), "Set of a new key, then Remove")

	// A key holding a pointer hashes without escaping.
	type conn struct{ id *int }
	byConn, err := New(h, func(conn, int) {})
	require.NoError(t, err)
	c := conn{value}
	require.NoError(t, byConn.Set(c, 1, time.Hour))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { byConn.Move(c, time.Hour) }), "Move of a key holding a pointer")
}
