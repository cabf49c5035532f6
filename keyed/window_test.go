package keyed

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// A key's expiry takes the entry's lock after the timer has claimed its
// timeout. These tests hold the expiry between the two, with an executor
// that parks what the timer hands it, and check that a Remove, Move or Set
// that takes the lock first wins.

// parkingExecutor keeps the functions the timer hands it until release;
// from then on it runs each on a goroutine of its own.
type parkingExecutor struct {
	mu       sync.Mutex
	parked   []func()
	released bool
	wg       sync.WaitGroup
}

func (p *parkingExecutor) Execute(f func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.released {
		p.parked = append(p.parked, f)
		return nil
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
	return nil
}

// waiting returns the number of functions parked.
func (p *parkingExecutor) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}

// release runs the parked functions, and later ones at once, and waits
// until they have returned.
func (p *parkingExecutor) release() {
	p.mu.Lock()
	parked := p.parked
	p.parked, p.released = nil, true
	p.mu.Unlock()
	for _, f := range parked {
		f()
	}
	p.wg.Wait()
}

// firedAndParked returns a set on a fake timer made with opts whose
// expiries park, with key "a" set to 1, due at 50ms, and the clock moved
// past its deadline: the timer has claimed the timeout, and its expiry
// waits in the executor.
func firedAndParked(t *testing.T, opts ...hashedwheel.Option) (*Timers[string, int], *recorder[string, int], *clock.Fake, *parkingExecutor) {
	t.Helper()
	exec := &parkingExecutor{}
	set, rec, fake, h := newRecorded(t, append(opts, hashedwheel.WithExecutor(exec))...)
	t.Cleanup(func() {
		exec.release()
		h.Stop()
	})
	require.NoError(t, set.Set("a", 1, 50*time.Millisecond))
	s := set.shardFor("a")
	s.mu.Lock()
	timeout := s.m["a"].timeout
	s.mu.Unlock()
	fake.WaitAsleep()
	fake.Jump(60 * time.Millisecond)
	fake.WaitAsleep() // the worker has handed the expiry to the executor
	require.True(t, timeout.IsExpired(), "the timer did not claim the timeout")
	require.NotZero(t, exec.waiting())
	require.True(t, set.Pending("a"), "the key left the set before its expiry ran")
	return set, rec, fake, exec
}

func TestRemoveWinsOverAnExpiryWaitingToRun(t *testing.T) {
	set, rec, fake, exec := firedAndParked(t)
	v, ok := set.Remove("a")
	require.True(t, ok)
	assert.Equal(t, 1, v)
	exec.release()
	fake.Settle()
	assert.Empty(t, rec.calls(), "the expiry ran for an entry Remove had returned")
	assert.Zero(t, set.Len())
}

func TestMoveWinsOverAnExpiryWaitingToRun(t *testing.T) {
	set, rec, fake, exec := firedAndParked(t)
	movedAt := now(fake)
	v, ok := set.Move("a", 100*time.Millisecond)
	require.True(t, ok, "Move of a key whose expiry has not taken it out")
	assert.Equal(t, 1, v)
	exec.release()
	fake.Settle()
	assert.Empty(t, rec.calls(), "the expiry of the old deadline ran after Move")
	assert.True(t, set.Pending("a"))

	fake.Advance(time.Second)
	calls := rec.calls()
	require.Len(t, calls, 1, "the moved key expires once")
	assert.Equal(t, expiry[string, int]{"a", 1, calls[0].at}, calls[0])
	assert.GreaterOrEqual(t, calls[0].at, movedAt+100*time.Millisecond)
}

func TestSetWinsOverAnExpiryWaitingToRun(t *testing.T) {
	set, rec, fake, exec := firedAndParked(t)
	setAt := now(fake)
	require.NoError(t, set.Set("a", 2, 100*time.Millisecond))
	exec.release()
	fake.Settle()
	assert.Empty(t, rec.calls(), "the expiry of the replaced deadline ran")

	fake.Advance(time.Second)
	calls := rec.calls()
	require.Len(t, calls, 1)
	assert.Equal(t, 2, calls[0].value, "the expiry has the value set last")
	assert.GreaterOrEqual(t, calls[0].at, setAt+100*time.Millisecond)
}

// A Set or Move that needs a new timeout while the key's expiry waits, and
// that the timer refuses at its pending limit, changes nothing: the expiry
// then ends the entry, with its value.
func TestSetAndMoveRefusedAtTheLimitLetAnExpiryWaitingToRunEnd(t *testing.T) {
	set, rec, fake, exec := firedAndParked(t, hashedwheel.WithMaxPendingTimeouts(1))
	require.NoError(t, set.Set("b", 2, time.Hour)) // takes the place "a" left when it fired
	_, ok := set.Move("a", time.Hour)
	assert.False(t, ok, "Move succeeded at the limit")
	err := set.Set("a", 10, time.Hour)
	require.ErrorIs(t, err, hashedwheel.ErrTooManyPendingTimeouts)
	v, ok := set.Get("a")
	require.True(t, ok)
	assert.Equal(t, 1, v, "a refused Set changed the value")

	exec.release()
	fake.Settle()
	assert.Equal(t, []expiry[string, int]{{"a", 1, 60 * time.Millisecond}}, rec.calls())
	assert.False(t, set.Pending("a"))
	assert.True(t, set.Pending("b"))
}

// An entry removed while its expiry waits, and reused for another key of
// its shard, is not ended by that expiry: the new key stays, and expires
// on its own with its own value.
func TestAReusedEntryIgnoresTheExpiryOfItsLastKey(t *testing.T) {
	set, rec, fake, exec := firedAndParked(t)
	other := ""
	for i := 0; other == ""; i++ {
		if k := fmt.Sprint("b", i); set.shardFor(k) == set.shardFor("a") {
			other = k
		}
	}
	_, ok := set.Remove("a")
	require.True(t, ok)
	s := set.shardFor("a")
	s.mu.Lock()
	reusable := s.free[len(s.free)-1]
	s.mu.Unlock()
	require.NoError(t, set.Set(other, 2, 100*time.Millisecond))
	s.mu.Lock()
	require.Same(t, reusable, s.m[other], "the removed entry was not reused")
	s.mu.Unlock()

	exec.release()
	fake.Settle()
	assert.Empty(t, rec.calls(), "the old expiry ended the entry's new key")
	assert.True(t, set.Pending(other))
	fake.Advance(time.Second)
	calls := rec.calls()
	require.Len(t, calls, 1)
	assert.Equal(t, other, calls[0].key)
	assert.Equal(t, 2, calls[0].value)
}

// Once the expiry has taken the key out, the key is gone for every other
// call: the expiry function sees it absent, and a Set in it makes a new
// entry that expires on its own.
func TestExpiryFunctionSeesItsKeyGoneAndMaySetItAgain(t *testing.T) {
	h, fake := newFakeTimer(t)
	// inside is what one call of the expiry function saw.
	type inside struct {
		value           int
		pending, moved  bool
		removed, got    bool
		at              time.Duration
		setErr          error
		pendingAfterSet bool
		len             int
	}
	var (
		mu   sync.Mutex
		seen []inside
		set  *Timers[string, int]
	)
	set, err := New(h, func(key string, value int) {
		s := inside{value: value, at: now(fake)}
		s.pending = set.Pending(key)
		_, s.moved = set.Move(key, time.Hour)
		_, s.removed = set.Remove(key)
		_, s.got = set.Get(key)
		s.len = set.Len()
		if value < 3 {
			s.setErr = set.Set(key, value+1, 100*time.Millisecond) // a new entry
			s.pendingAfterSet = set.Pending(key)
		}
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, set.Set("a", 1, 100*time.Millisecond))
	fake.Advance(time.Second)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 3, "each entry set by an expiry expires on its own")
	for i, s := range seen {
		assert.Equal(t, i+1, s.value)
		assert.False(t, s.pending || s.moved || s.removed || s.got, "the key was still in the set in its expiry: %+v", s)
		assert.Zero(t, s.len)
		if i > 0 {
			assert.GreaterOrEqual(t, s.at, seen[i-1].at+100*time.Millisecond, "an entry set by an expiry expired early")
		}
		if s.value < 3 {
			assert.NoError(t, s.setErr)
			assert.True(t, s.pendingAfterSet)
		}
	}
	assert.Zero(t, set.Len())
}

// Two entries of one key may expire at once: the second, set while the
// first one's expiry runs, expires while it still runs.
func TestTwoEntriesOfOneKeyExpireConcurrently(t *testing.T) {
	h, fake := newFakeTimer(t)
	entered := make(chan int, 2)
	unblock := make(chan struct{})
	set, err := New(h, func(_ string, value int) {
		entered <- value
		if value == 1 {
			<-unblock
		}
	})
	require.NoError(t, err)
	require.NoError(t, set.Set("a", 1, 50*time.Millisecond))
	fake.WaitAsleep()
	fake.Jump(60 * time.Millisecond)
	require.Equal(t, 1, <-entered)
	assert.False(t, set.Pending("a"))
	require.NoError(t, set.Set("a", 2, 50*time.Millisecond))
	fake.WaitAsleep()
	fake.Jump(60 * time.Millisecond)
	assert.Equal(t, 2, <-entered, "the second entry's expiry waited for the first one's")
	close(unblock)
	fake.Settle()
	assert.Zero(t, set.Len())
}
