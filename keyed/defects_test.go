package keyed

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Move and Set of a key in the set allocate nothing, to a later deadline
// or an earlier one, counted over many calls rather than rounded per call.
// The calls come in bursts with a tick between them, as on a real clock,
// so that the timer's worker takes the deadlines moved earlier at each
// tick, as it does while fewer than 4096 a tick are moved earlier in any
// of its shards.
func TestMoveAndSetOfAPresentKeyNeverAllocate(t *testing.T) {
	h, fake := newFakeTimer(t)
	set, err := New(h, func(int, *int) {})
	require.NoError(t, err)
	value := new(int)
	const keys, burst, bursts = 64, 2000, 50
	for k := range keys {
		require.NoError(t, set.Set(k, value, time.Hour))
	}
	fake.Advance(5 * tick) // the worker has taken every timeout into a bucket
	// Each key goes back and forth between two delays: every other call
	// moves its deadline earlier.
	delays := [...]time.Duration{2 * time.Hour, time.Minute, 3 * time.Hour, time.Second}
	i := 0
	// moveAndSet returns the allocations of the calls alone, not of the
	// fake clock's Advance between the bursts.
	moveAndSet := func(bursts int) (mallocs uint64) {
		for range bursts {
			mallocs += countMallocs(func() {
				for range burst / 2 {
					set.Move(i%keys, delays[i%len(delays)])
					_ = set.Set(i%keys, value, delays[(i+1)%len(delays)])
					i++
				}
			})
			fake.Advance(tick)
		}
		return mallocs
	}
	moveAndSet(2) // the timer's queues have their chunks
	mallocs := moveAndSet(bursts)
	// A few allocations of the runtime's own may fall in the window; a
	// chunk per 128 moves to an earlier deadline would be hundreds.
	assert.Less(t, mallocs, uint64(20), "allocations in %d calls of Move and Set of a key in the set", burst*bursts)
	assert.Equal(t, keys, set.Len())
}

// countMallocs returns the heap allocations f makes.
func countMallocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

// A key not equal to itself (a NaN, or a struct or interface holding
// one) could never be found again: Set refuses it and the set stays empty.
func TestSetRefusesAKeyNotEqualToItself(t *testing.T) {
	h, fake := newFakeTimer(t)
	floats, err := New(h, func(float64, int) {})
	require.NoError(t, err)
	require.ErrorIs(t, floats.Set(math.NaN(), 1, tick), ErrInvalidKey)
	require.NoError(t, floats.Set(1.5, 1, tick))

	type point struct{ x, y float64 }
	points, err := New(h, func(point, int) {})
	require.NoError(t, err)
	require.ErrorIs(t, points.Set(point{1, math.NaN()}, 1, tick), ErrInvalidKey)

	anys, err := New(h, func(any, int) {})
	require.NoError(t, err)
	require.ErrorIs(t, anys.Set(any(math.NaN()), 1, tick), ErrInvalidKey)
	require.NoError(t, anys.Set("s", 1, tick))

	assert.Equal(t, 1, floats.Len())
	assert.Zero(t, points.Len())
	assert.Equal(t, 1, anys.Len())
	fake.Advance(3 * tick)
	assert.Zero(t, floats.Len())
	assert.Zero(t, points.Len())
	assert.Zero(t, anys.Len())
	assert.Zero(t, h.PendingTimeouts())
}

// After a wave of keys has expired, the set gives back the memory of its
// maps: what stays is bounded by the keys still in the set, not by the
// largest count the set ever held.
func TestAWaveOfExpiriesGivesItsMemoryBack(t *testing.T) {
	if testing.Short() {
		t.Skip("sets 200 000 keys")
	}
	h, fake := newFakeTimer(t)
	set, err := New(h, func(string, int) {})
	require.NoError(t, err)
	const wave = 200_000
	keys := make([]string, wave)
	for i := range keys {
		keys[i] = fmt.Sprintf("session-%07d", i)
	}
	base := heapAlloc()
	for i, key := range keys {
		require.NoError(t, set.Set(key, i, time.Second))
	}
	full := heapAlloc()
	fake.Advance(2 * time.Second)
	require.Zero(t, set.Len())
	require.Zero(t, h.PendingTimeouts())
	retained := int64(heapAlloc()) - int64(base)
	t.Logf("heap: %d B before, %d B with %d keys, %d B retained after they expired", base, full, wave, retained)
	require.Greater(t, full-base, uint64(wave*32), "the wave took less memory than its keys")
	assert.Less(t, retained, int64(retainedBound(len(set.shards))),
		"memory kept after every key expired")
	runtime.KeepAlive(keys)
}

// heapAlloc returns the live heap after a collection.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// retainedBound is the most memory a set of shards shards keeps once its
// keys have left, in bytes: per shard a map of at most 2 × shrinkFloor
// slots and maxFree entries kept for reuse, at 64 bytes each, which covers
// a slot of a string key and a pointer and an entry of a string and an
// int; and 1 MiB for the timer's own memory and the runtime's noise.
func retainedBound(shards int) int {
	return shards*(2*shrinkFloor+maxFree)*64 + 1<<20
}

// A key whose dynamic value cannot be compared (a slice, map or func in an
// interface, alone or inside a struct) would panic in a map: Set refuses
// it, and every other method treats it as a key not in the set.
func TestAKeyThatCannotBeComparedCrashesNothing(t *testing.T) {
	h, _ := newFakeTimer(t)
	type wrapped struct{ v any }
	for _, key := range []any{[]int{1}, map[string]int{}, func() {}, wrapped{[]byte("x")}} {
		anys, err := New(h, func(any, int) {})
		require.NoError(t, err)
		require.ErrorIs(t, anys.Set(key, 1, tick), ErrInvalidKey, "%T", key)
		_, ok := anys.Get(key)
		assert.False(t, ok)
		assert.False(t, anys.Pending(key))
		_, ok = anys.Move(key, tick)
		assert.False(t, ok)
		_, err = anys.Reschedule(key, tick)
		assert.ErrorIs(t, err, ErrNotFound)
		_, ok = anys.Remove(key)
		assert.False(t, ok)
		require.NoError(t, anys.Set("a string", 1, tick), "a comparable key still goes in")
		assert.Equal(t, 1, anys.Len())
	}
}
