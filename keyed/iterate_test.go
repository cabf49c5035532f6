package keyed

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

// All yields every key in the set once with its value, leaves the
// deadlines alone, stops when the loop breaks, and lets the loop's body
// call the set; after the timer's Stop it lists the keys that stayed.
func TestAllListsEveryKeyWithItsValue(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	want := map[string]int{}
	for i := range 100 {
		key := fmt.Sprint("key-", i)
		want[key] = i
		require.NoError(t, set.Set(key, i, time.Duration(i+1)*time.Second))
	}
	assert.Equal(t, want, maps.Collect(set.All()))

	n := 0
	for key := range set.All() {
		set.Remove(key) // the body may call the set
		if n++; n == 10 {
			break
		}
	}
	assert.Equal(t, 10, n)
	assert.Equal(t, 90, set.Len())
	got := maps.Collect(set.All())
	assert.Len(t, got, 90)
	for key, value := range got {
		assert.Equal(t, want[key], value)
	}

	fake.Advance(50*time.Second + tick)
	expired := len(rec.calls())
	require.NotZero(t, expired)
	h.Stop()
	left := maps.Collect(set.All())
	assert.Len(t, left, set.Len(), "after Stop, All lists the keys that stayed")
	assert.Equal(t, 90, len(left)+expired)
	for key := range left {
		assert.True(t, set.Pending(key))
	}
}

// Drain takes every key out with its value, once, and their expiry never
// runs; f may call the set, and the set is empty and usable after it.
func TestDrainTakesEveryKeyAndItsExpiryNeverRuns(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	want := map[string]int{}
	for i := range 1000 {
		key := fmt.Sprint("key-", i)
		want[key] = i
		require.NoError(t, set.Set(key, i, time.Duration(i%7+1)*tick))
	}
	got := map[string]int{}
	n := set.Drain(func(key string, value int) {
		_, dup := got[key]
		assert.False(t, dup, "drained twice: %s", key)
		got[key] = value
		assert.False(t, set.Pending(key), "a drained key is still in the set")
	})
	assert.Equal(t, 1000, n)
	assert.Equal(t, want, got)
	assert.Zero(t, set.Len())
	fake.Advance(time.Second)
	assert.Empty(t, rec.calls(), "a drained key expired")
	assert.Zero(t, h.PendingTimeouts(), "a drained key's timeout is still pending")

	require.NoError(t, set.Set("again", 1, tick))
	assert.Equal(t, 1, set.Drain(nil))
	assert.Zero(t, set.Len())
}

// After the timer's Stop, Drain hands over every key that stayed, with
// its value: the end of a shutdown.
func TestDrainAfterStopHandsOverTheKeysThatStayed(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	require.NoError(t, set.Set("a", 1, time.Hour))
	require.NoError(t, set.Set("b", 2, 2*time.Hour))
	require.NoError(t, set.Set("gone", 3, tick))
	fake.Advance(2 * tick)
	require.Len(t, rec.calls(), 1)
	h.Stop()

	got := map[string]int{}
	assert.Equal(t, 2, set.Drain(func(key string, value int) { got[key] = value }))
	assert.Equal(t, map[string]int{"a": 1, "b": 2}, got)
	assert.Zero(t, set.Len())
}

// Drains racing Sets, Removes and expiries: every value is handed over
// once, by the expiry, by Remove or by a Drain, and none is left behind.
func TestDrainRacingSetsRemovesAndExpiries(t *testing.T) {
	var (
		mu       sync.Mutex
		handed   = map[string]int{}
		h, fake  = newFakeTimer(t)
		hand     = func(key string, _ int) { mu.Lock(); handed[key]++; mu.Unlock() }
		set, err = New(h, hand)
	)
	require.NoError(t, err)
	const producers, perProducer = 4, 300
	wait := racetest.Run(producers+1, perProducer, func(p, i int) {
		if p == producers {
			if i%30 == 0 {
				set.Drain(hand)
			}
			if i%50 == 0 {
				fake.Advance(tick)
			}
			return
		}
		key := fmt.Sprint(p, "/", i)
		if set.Set(key, i, time.Duration(i%3)*tick) != nil {
			return
		}
		if i%4 == 0 {
			if _, ok := set.Remove(key); ok {
				hand(key, i)
			}
		}
	})
	wait()
	set.Drain(hand)
	fake.Advance(time.Second)
	assert.Zero(t, set.Len())
	assert.Zero(t, h.PendingTimeouts())
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, handed, producers*perProducer)
	for key, n := range handed {
		assert.Equal(t, 1, n, "handed over %d times: %s", n, key)
	}
}

// Entry gives, for each timeout of the set that the timer's Stop handed
// back, the key that stayed in the set and its value; nothing for a
// timeout of another task or set, or one no longer current.
func TestEntryGivesTheKeyAndValueOfEachTimeoutStopHandsBack(t *testing.T) {
	set, _, _, h := newRecorded(t)
	other, err := New(h, func(string, int) {})
	require.NoError(t, err)
	require.NoError(t, set.Set("a", 1, time.Hour))
	require.NoError(t, set.Set("b", 2, time.Hour))
	require.NoError(t, other.Set("c", 3, time.Hour))
	_, err = h.AfterFunc(time.Hour, func() {})
	require.NoError(t, err)
	require.NoError(t, set.Set("removed", 4, time.Hour))
	removedTimeout := set.shardFor("removed").m["removed"].timeout
	set.Remove("removed")

	got, others := map[string]int{}, 0
	for _, timeout := range h.Stop() {
		if key, value, ok := set.Entry(timeout); ok {
			got[key] = value
			continue
		}
		others++
	}
	assert.Equal(t, map[string]int{"a": 1, "b": 2}, got)
	assert.Equal(t, 2, others, "the other set's timeout and the AfterFunc")
	_, _, ok := set.Entry(removedTimeout)
	assert.False(t, ok, "a removed key's timeout")
	_, _, ok = set.Entry(nil)
	assert.False(t, ok)
	key, value, ok := other.Entry(other.shardFor("c").m["c"].timeout)
	assert.True(t, ok)
	assert.Equal(t, "c", key)
	assert.Equal(t, 3, value)
}

// TestEntryLeavesTheKeyInTheSet: Entry only looks, so a shutdown that
// names the set's keys with Entry and then Drains would hand each over
// twice; Remove of the key Entry named takes it out, and Drain then hands
// over only the others.
func TestEntryLeavesTheKeyInTheSet(t *testing.T) {
	set, _, _, h := newRecorded(t)
	require.NoError(t, set.Set("a", 1, time.Hour))
	require.NoError(t, set.Set("b", 2, time.Hour))
	var named []string
	for _, timeout := range h.Stop() {
		if key, _, ok := set.Entry(timeout); ok {
			named = append(named, key)
		}
	}
	assert.ElementsMatch(t, []string{"a", "b"}, named)
	assert.Equal(t, 2, set.Len(), "Entry took nothing out")
	value, ok := set.Remove("a")
	assert.True(t, ok)
	assert.Equal(t, 1, value)
	var drained []string
	assert.Equal(t, 1, set.Drain(func(key string, _ int) { drained = append(drained, key) }))
	assert.Equal(t, []string{"b"}, drained)
}

// Reschedule tells a key not in the set (ErrNotFound) from a stopped
// timer (ErrStopped), where Move returns false for both.
func TestRescheduleTellsAMissingKeyFromAStoppedTimer(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	require.NoError(t, set.Set("a", 1, 5*tick))
	_, err := set.Reschedule("missing", time.Hour)
	assert.ErrorIs(t, err, ErrNotFound)
	value, err := set.Reschedule("a", 10*tick)
	require.NoError(t, err)
	assert.Equal(t, 1, value)
	fake.Advance(9 * tick)
	assert.Empty(t, rec.calls(), "Reschedule did not move the deadline")

	h.Stop()
	value, err = set.Reschedule("a", time.Hour)
	assert.ErrorIs(t, err, hashedwheel.ErrStopped)
	assert.NotErrorIs(t, err, ErrNotFound)
	assert.Zero(t, value)
	_, err = set.Reschedule("missing", time.Hour)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.NotErrorIs(t, err, hashedwheel.ErrStopped)
	_, ok := set.Move("a", time.Hour)
	assert.False(t, ok)
	assert.True(t, set.Pending("a"))
}
