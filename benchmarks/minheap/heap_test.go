package minheap

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/engine"
)

// checkHeap fails unless every entry knows its index and no child is due
// before its parent.
func checkHeap(t *testing.T, h *heap) {
	t.Helper()
	for i, e := range h.items {
		if e.Link.index != i {
			t.Fatalf("entry at %d records index %d", i, e.Link.index)
		}
		if i > 0 && h.items[(i-1)/2].When > e.When {
			t.Fatalf("entry at %d (When %d) is due before its parent (When %d)", i, e.When, h.items[(i-1)/2].When)
		}
	}
}

// In virtual time, an entry expires at the first Expire whose now has
// reached its deadline: not before, not after; cancelled ones never.
func TestHeapExpiresExactlyAtDeadline(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 7))
		h := &heap{}
		live := map[*entry]bool{}
		var all []*entry
		now := int64(0)
		for range 2000 {
			for range rng.IntN(8) {
				e := engine.Detached[link](now + rng.Int64N(10_000))
				h.Insert(e, now)
				live[e] = true
				all = append(all, e)
			}
			for range rng.IntN(4) {
				e := all[rng.IntN(len(all))]
				if !live[e] {
					continue
				}
				e.MarkCancelled()
				if rng.IntN(3) != 0 { // else Expire meets it still linked
					h.Remove(e)
				}
				delete(live, e)
			}
			for range rng.IntN(4) {
				if len(all) == 0 {
					break
				}
				if e := all[rng.IntN(len(all))]; live[e] {
					h.Move(e, now+rng.Int64N(10_000), now)
				}
			}
			checkHeap(t, h)
			now += rng.Int64N(200)
			for _, e := range h.Expire(now, nil) {
				if !live[e] {
					t.Fatalf("cancelled or expired entry (When %d) expired at %d", e.When, now)
				}
				if e.When > now {
					t.Fatalf("early: entry due %d expired at %d", e.When, now)
				}
				delete(live, e)
			}
			for e := range live {
				if e.When <= now {
					t.Fatalf("late: entry due %d pending at %d", e.When, now)
				}
			}
			if next := h.Next(); next <= now {
				t.Fatalf("Next %d not after now %d", next, now)
			}
		}
		n := 0
		h.Clear(func(e *entry) {
			if live[e] {
				n++
			}
		})
		if n != len(live) || h.Next() != math.MaxInt64 {
			t.Fatalf("Clear returned %d of %d pending entries", n, len(live))
		}
	}
}

// After a burst expires, the heap gives back its array.
func TestHeapShrinksAfterBurst(t *testing.T) {
	h := &heap{}
	for i := range 20_000 {
		h.Insert(engine.Detached[link](int64(i)), 0)
	}
	h.Expire(20_000, nil)
	if c := cap(h.items); c > shrinkBelow*2 {
		t.Fatalf("cap %d after the heap emptied", c)
	}
}
