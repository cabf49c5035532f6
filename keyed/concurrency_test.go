package keyed

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Goroutines set, move, remove and read a few shared keys while the fake
// clock moves and their entries expire. Every value is set once, so that
// its fate can be followed: no value is delivered twice (to the expiry
// function or by Remove), no expiry comes before the last deadline given
// to its entry, and once the goroutines stop and the clock passes every
// deadline, the set and the timer are empty.
func TestConcurrentSetMoveRemoveAndExpiry(t *testing.T) {
	const (
		goroutines = 8
		opsEach    = 3000
		keys       = 16
		delay      = 30 * time.Millisecond
	)
	h, fake := newFakeTimer(t)
	var (
		mu        sync.Mutex
		delivered = map[int]string{}        // value → "expired" or "removed"
		notBefore = map[int]time.Duration{} // value → the latest deadline it was given, as low as the caller could know it
	)
	deliver := func(value int, how string) {
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := delivered[value]; dup {
			t.Errorf("value %d %s after it was %s", value, how, prev)
		}
		delivered[value] = how
	}
	raise := func(value int, deadline time.Duration) {
		mu.Lock()
		notBefore[value] = max(notBefore[value], deadline)
		mu.Unlock()
	}
	set, err := New(h, func(key string, value int) {
		at := now(fake)
		mu.Lock()
		deadline := notBefore[value]
		mu.Unlock()
		if at < deadline {
			t.Errorf("%s=%d expired at %v, before its deadline %v", key, value, at, deadline)
		}
		deliver(value, "expired")
	})
	require.NoError(t, err)

	var next atomic.Int64 // the source of unique values
	stop := make(chan struct{})
	clockDone := make(chan struct{})
	go func() { // the clock moves while the goroutines work
		defer close(clockDone)
		for {
			select {
			case <-stop:
				return
			default:
				fake.Advance(tick / 2)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range opsEach {
				key := fmt.Sprint("k", r.IntN(keys))
				switch op := r.IntN(10); {
				case op < 4:
					v := int(next.Add(1))
					raise(v, now(fake)+delay)
					if err := set.Set(key, v, delay); err != nil {
						t.Errorf("Set: %v", err)
					}
				case op < 7:
					before := now(fake)
					if v, ok := set.Move(key, delay); ok {
						raise(v, before+delay)
					}
				case op < 8:
					if v, ok := set.Remove(key); ok {
						deliver(v, "removed")
					}
				default:
					set.Get(key)
					set.Pending(key)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-clockDone
	fake.Advance(delay + 2*tick)
	assert.Zero(t, set.Len(), "keys left after every deadline passed")
	assert.Zero(t, h.PendingTimeouts(), "timeouts left after every deadline passed")
	mu.Lock()
	defer mu.Unlock()
	expired := 0
	for _, how := range delivered {
		if how == "expired" {
			expired++
		}
	}
	assert.NotZero(t, expired, "nothing expired while the goroutines worked")
	assert.Less(t, expired, len(delivered), "nothing was removed")
}
