package keyed

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/racetest"
)

// After the timer's Stop the keys stay in the set and never expire; Set
// fails with ErrStopped and changes nothing, Move returns false, and Len,
// Pending, Get and Remove still see the keys.
func TestKeysStayAndNeverExpireAfterStop(t *testing.T) {
	set, rec, fake, h := newRecorded(t)
	require.NoError(t, set.Set("a", 1, 100*time.Millisecond))
	require.NoError(t, set.Set("b", 2, time.Hour))
	require.NoError(t, set.Set("gone", 3, 10*time.Millisecond))
	fake.Advance(50 * time.Millisecond)
	require.Len(t, rec.calls(), 1)

	assert.Len(t, h.Stop(), 2, "Stop returns the timeouts of the keys in the set")
	fake.Advance(2 * time.Hour)
	assert.Len(t, rec.calls(), 1, "a key expired after Stop")
	assert.Equal(t, 2, set.Len())
	assert.True(t, set.Pending("a"))
	assert.False(t, set.Pending("gone"))

	err := set.Set("c", 4, time.Second)
	require.ErrorIs(t, err, hashedwheel.ErrStopped)
	assert.False(t, set.Pending("c"))
	err = set.Set("a", 10, time.Second)
	require.ErrorIs(t, err, hashedwheel.ErrStopped)
	v, ok := set.Get("a")
	require.True(t, ok)
	assert.Equal(t, 1, v, "a Set that failed replaced the value")
	v, ok = set.Move("a", time.Second)
	assert.False(t, ok, "Move after Stop")
	assert.Zero(t, v)
	assert.Equal(t, 2, set.Len())

	v, ok = set.Remove("b")
	assert.True(t, ok)
	assert.Equal(t, 2, v)
	assert.Equal(t, 1, set.Len())
	fake.Advance(time.Hour)
	assert.Len(t, rec.calls(), 1)
}

// Sets racing Stop: each one either added its key, which then stays in the
// set and never expires, or failed with ErrStopped and added nothing.
func TestSetsRacingStopAddTheirKeyOrFail(t *testing.T) {
	set, rec, _, h := newRecorded(t)
	const producers, perProducer = 8, 500
	var (
		mu      sync.Mutex
		added   = map[string]bool{}
		refused int
		stopped = make(chan struct{})
	)
	wait := racetest.Run(producers, perProducer, func(p, i int) {
		if p == 0 && i == perProducer/4 {
			h.Stop()
			close(stopped)
		}
		key := fmt.Sprint(p, "/", i)
		err := set.Set(key, i, time.Hour)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			added[key] = true
			return
		}
		assert.ErrorIs(t, err, hashedwheel.ErrStopped)
		refused++
	})
	wait()
	<-stopped
	assert.NotZero(t, refused, "no Set came after Stop")
	assert.Equal(t, len(added), set.Len())
	for p := range producers {
		for i := range perProducer {
			key := fmt.Sprint(p, "/", i)
			assert.Equal(t, added[key], set.Pending(key), key)
		}
	}
	assert.Empty(t, rec.calls())
}
