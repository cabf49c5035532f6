package hierarchical

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/engine"
)

// tickEnd returns the end of the level-0 tick that holds t: the instant a
// timeout due at t expires, if the worker is on time.
func tickEnd(t, tick int64) int64 { return (t/tick + 1) * tick }

// model drives wheels in virtual time and checks every expiry against the
// rule: an entry expires at the first Expire whose now has reached the end
// of the tick holding its deadline, not before and not after.
type model struct {
	t       *testing.T
	w       *wheels
	tick    int64
	now     int64
	live    map[*entry]bool // inserted, neither expired nor cancelled
	expired map[*entry]bool
}

func newModel(t *testing.T, tick int64, size int) *model {
	return &model{t: t, w: newWheels(tick, size), tick: tick,
		live: map[*entry]bool{}, expired: map[*entry]bool{}}
}

func (m *model) insert(delay int64) *entry {
	e := engine.Detached[link](min(m.now+delay, engine.MaxWhen))
	m.w.Insert(e, m.now)
	m.live[e] = true
	return e
}

// cancel cancels e the way Entry.Cancel does: mark, then unlink. With
// unlink false it leaves e linked, as if Cancel were still waiting for the
// lock when the worker expires it.
func (m *model) cancel(e *entry, unlink bool) {
	if !e.MarkCancelled() {
		m.t.Fatalf("cancel of a non-pending entry (When %d)", e.When)
	}
	if unlink {
		m.w.Remove(e)
	}
	delete(m.live, e)
}

// move gives the live entry e a new deadline, delay from now, as
// Entry.Reset does.
func (m *model) move(e *entry, delay int64) {
	m.w.Move(e, min(m.now+delay, engine.MaxWhen), m.now)
}

func (m *model) advanceTo(now int64) {
	m.t.Helper()
	m.now = now
	for _, e := range m.w.Expire(now, nil) {
		switch {
		case m.expired[e]:
			m.t.Fatalf("entry (When %d) expired twice", e.When)
		case !m.live[e]:
			m.t.Fatalf("cancelled entry (When %d) expired at %d", e.When, now)
		case now < tickEnd(e.When, m.tick):
			m.t.Fatalf("early: entry due %d (tick end %d) expired at %d", e.When, tickEnd(e.When, m.tick), now)
		case !e.IsExpired():
			m.t.Fatalf("entry (When %d) returned by Expire but not claimed", e.When)
		}
		m.expired[e] = true
		delete(m.live, e)
	}
	for e := range m.live {
		if tickEnd(e.When, m.tick) <= now {
			m.t.Fatalf("late: entry due %d (tick end %d) still pending at %d (levels %d)",
				e.When, tickEnd(e.When, m.tick), now, len(m.w.levels))
		}
	}
	if next := m.w.Next(); next <= now {
		m.t.Fatalf("Next %d is not after now %d once Expire has run", next, now)
	}
}

// randomDelay returns a delay spread over many orders of magnitude, so that
// every level gets entries, with some zero and some huge ones.
func randomDelay(rng *rand.Rand, tick int64) int64 {
	switch rng.IntN(20) {
	case 0:
		return 0
	case 1:
		return math.MaxInt64 / 2 // clamped to MaxWhen
	}
	return int64(math.Exp(rng.Float64() * math.Log(float64(tick)*1e7)))
}

// randomStep returns a clock step: mostly within a tick, sometimes many
// ticks, sometimes a long idle jump.
func randomStep(rng *rand.Rand, tick int64) int64 {
	switch rng.IntN(10) {
	case 0:
		return tick * rng.Int64N(100_000)
	case 1, 2:
		return tick * rng.Int64N(50)
	}
	return rng.Int64N(tick + 1)
}

func TestWheelsExpireExactlyAtTickEnd(t *testing.T) {
	for _, tc := range []struct {
		tick int64
		size int
	}{{10, 2}, {10, 3}, {7, 8}, {1000, 20}, {1_000_000, 64}} {
		for seed := range uint64(8) {
			rng := rand.New(rand.NewPCG(seed, uint64(tc.size)))
			m := newModel(t, tc.tick, tc.size)
			var all []*entry
			for range 400 {
				for range rng.IntN(6) {
					all = append(all, m.insert(randomDelay(rng, tc.tick)))
				}
				for range rng.IntN(3) {
					if len(all) == 0 {
						break
					}
					if e := all[rng.IntN(len(all))]; m.live[e] {
						m.cancel(e, rng.IntN(4) != 0)
					}
				}
				for range rng.IntN(3) {
					if len(all) == 0 {
						break
					}
					if e := all[rng.IntN(len(all))]; m.live[e] {
						m.move(e, randomDelay(rng, tc.tick))
					}
				}
				m.advanceTo(m.now + randomStep(rng, tc.tick))
			}
			var cleared int
			m.w.Clear(func(e *entry) {
				if e.IsCancelled() {
					return // cancelled while linked: not pending
				}
				if !m.live[e] {
					t.Fatalf("Clear returned an entry that is not pending (When %d)", e.When)
				}
				cleared++
			})
			if cleared != len(m.live) {
				t.Fatalf("tick %d size %d seed %d: Clear returned %d entries, %d pending",
					tc.tick, tc.size, seed, cleared, len(m.live))
			}
			if m.w.Next() != math.MaxInt64 {
				t.Fatalf("delay queue not empty after Clear")
			}
		}
	}
}

// A moved entry leaves its bucket: moved later it does not expire at its
// old tick, moved earlier it expires at its new one, and moved back and
// forth across levels it expires once.
func TestWheelsMoveReplacesTheEntry(t *testing.T) {
	const tick, size = 10, 4
	m := newModel(t, tick, size)
	later := m.insert(2 * tick)
	earlier := m.insert(tick * size * size * 3) // level 2
	bounced := m.insert(5 * tick)
	m.move(later, tick*size*size) // to level 2
	m.move(earlier, 3*tick)       // to level 0
	m.move(bounced, tick*size*size*size*2)
	m.move(bounced, 7*tick)
	m.advanceTo(4 * tick) // checks that only earlier expired, on time
	if !earlier.IsExpired() || later.IsExpired() {
		t.Fatalf("after the moves, at %d: earlier expired %v, later expired %v", m.now, earlier.IsExpired(), later.IsExpired())
	}
	m.advanceTo(tick * size * size * size * 4)
	if len(m.live) != 0 || !later.IsExpired() || !bounced.IsExpired() {
		t.Fatalf("%d entries pending after their moved deadlines", len(m.live))
	}
}

func TestWheelsCreateLevelsOnDemand(t *testing.T) {
	const tick, size = 10, 4
	m := newModel(t, tick, size)
	m.insert(tick * size / 2)
	if n := len(m.w.levels); n != 1 {
		t.Fatalf("levels = %d after a delay within level 0, want 1", n)
	}
	m.insert(tick * size * size * 2) // beyond level 1's span of size² ticks
	if n := len(m.w.levels); n != 3 {
		t.Fatalf("levels = %d after a delay of 2·size² ticks, want 3", n)
	}
	m.advanceTo(tick * size * size * 3)
	if len(m.live) != 0 {
		t.Fatalf("%d entries pending after their deadlines", len(m.live))
	}
}

// An empty tick costs nothing: with one far deadline, the worker's next
// wake-up is when that deadline's bucket is due, not the next tick.
func TestWheelsSleepThroughEmptyTicks(t *testing.T) {
	const tick, size = 1_000_000, 64 // 1ms × 64
	m := newModel(t, tick, size)
	e := m.insert(3_600_000_000_000) // one hour
	if next := m.w.Next(); next < tick*size*size {
		t.Fatalf("Next = %d for a single one-hour timeout; want a level-2 bucket, at least %d", next, tick*size*size)
	}
	wakeUps := 0
	for m.live[e] {
		m.advanceTo(m.w.Next())
		wakeUps++
	}
	if wakeUps > 3*len(m.w.levels) {
		t.Fatalf("%d wake-ups to expire one timeout through %d levels", wakeUps, len(m.w.levels))
	}
}

// A level-0 bucket ending when a level-1 bucket starts must expire first,
// so that the cascade does not land in its still-occupied slot.
func TestWheelsTieExpiresLowerLevelFirst(t *testing.T) {
	const tick, size = 10, 4
	m := newModel(t, tick, size)
	m.advanceTo(tick * size)         // level 0 covers [40, 80)
	last := m.insert(tick*size - 1)  // due 79: level 0's last bucket, [70, 80), due at 80
	mid := m.insert(tick*size + 75)  // due 115: level 1's bucket [80, 120), due at 80; cascades to level 0's slot 3, where 79 waits
	far := m.insert(3*tick*size + 5) // due 165: level 1's bucket [160, 200)
	m.advanceTo(2 * tick * size)     // 80: both buckets due
	if !last.IsExpired() {
		t.Fatal("level-0 bucket ending at the tie did not expire")
	}
	if !m.live[mid] || !m.live[far] {
		t.Fatal("entries due later expired at the tie")
	}
	m.advanceTo(200)
	if len(m.live) != 0 {
		t.Fatalf("%d entries pending after their deadlines", len(m.live))
	}
}
