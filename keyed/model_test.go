package keyed

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modelEntry is what the model knows of a key: its value and deadline.
type modelEntry struct {
	value    int
	deadline time.Duration
}

// Random Set, Move, Reschedule, Remove, Get, Pending, All and Drain calls,
// with the fake clock moved between them, checked against a plain map of
// deadlines: every call answers as the map does, and after each move of
// the clock exactly the due keys have expired, each once with its last
// value, none before its deadline, and each by the end of the tick that
// covers it.
func TestModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	set, rec, fake, h := newRecorded(t)
	r := rand.New(rand.NewPCG(seed, 2))
	model := map[string]modelEntry{}
	seen := 0 // expiries checked so far
	value := 0
	for step := range 400 {
		key := fmt.Sprint("k", r.IntN(12))
		delay := time.Duration(r.IntN(200)-20) * time.Millisecond
		at := now(fake)
		switch op := r.IntN(14); {
		case op < 4:
			value++
			require.NoError(t, set.Set(key, value, delay))
			model[key] = modelEntry{value, at + max(delay, 0)}
		case op < 5:
			v, ok := set.Move(key, delay)
			m, want := model[key]
			require.Equal(t, want, ok, "step %d: Move(%s)", step, key)
			if ok {
				require.Equal(t, m.value, v)
				model[key] = modelEntry{m.value, at + max(delay, 0)}
			}
		case op < 6:
			v, err := set.Reschedule(key, delay)
			m, want := model[key]
			if !want {
				require.ErrorIs(t, err, ErrNotFound, "step %d: Reschedule(%s)", step, key)
				break
			}
			require.NoError(t, err, "step %d: Reschedule(%s)", step, key)
			require.Equal(t, m.value, v)
			model[key] = modelEntry{m.value, at + max(delay, 0)}
		case op < 7:
			v, ok := set.Remove(key)
			m, want := model[key]
			require.Equal(t, want, ok, "step %d: Remove(%s)", step, key)
			require.Equal(t, m.value, v)
			delete(model, key)
		case op < 8:
			v, ok := set.Get(key)
			m, want := model[key]
			require.Equal(t, want, ok, "step %d: Get(%s)", step, key)
			require.Equal(t, m.value, v)
			require.Equal(t, want, set.Pending(key))
		case op < 9:
			listed := map[string]int{}
			for k, v := range set.All() {
				listed[k] = v
			}
			require.Len(t, listed, len(model), "step %d: All", step)
			for k, m := range model {
				require.Equal(t, m.value, listed[k], "step %d: All, %s", step, k)
			}
		case op < 10 && r.IntN(10) == 0:
			drained := map[string]int{}
			n := set.Drain(func(k string, v int) { drained[k] = v })
			require.Equal(t, len(model), n, "step %d: Drain", step)
			for k, m := range model {
				require.Equal(t, m.value, drained[k], "step %d: Drain, %s", step, k)
			}
			clear(model)
		default:
			fake.Advance(time.Duration(1+r.IntN(30)) * time.Millisecond)
			calls := rec.calls()
			for _, c := range calls[seen:] {
				m, ok := model[c.key]
				require.True(t, ok, "step %d: %s expired, not in the set", step, c.key)
				require.Equal(t, m.value, c.value, "step %d: %s expired with an old value", step, c.key)
				require.GreaterOrEqual(t, c.at, m.deadline, "step %d: %s expired early", step, c.key)
				delete(model, c.key)
			}
			seen = len(calls)
			// What is left is not due yet, or due in a tick not yet over.
			for k, m := range model {
				require.Greater(t, endOfTick(m.deadline), now(fake), "step %d: %s, due at %v, has not expired at %v", step, k, m.deadline, now(fake))
			}
		}
		require.Equal(t, len(model), set.Len(), "step %d", step)
	}
	fake.Advance(time.Second)
	assert.Len(t, rec.calls(), seen+len(model))
	assert.Zero(t, set.Len())
	assert.Zero(t, h.PendingTimeouts())
}

// endOfTick returns the end of the tick that covers instant d: when a
// timeout due at d fires.
func endOfTick(d time.Duration) time.Duration { return (d/tick + 1) * tick }
