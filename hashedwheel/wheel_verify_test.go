package hashedwheel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verifyWheel checks h's wheel, and its bounds unless a report, of a
// Reset that may have moved a deadline earlier, is still queued. Call it
// only while h's worker is asleep or gone.
func verifyWheel(h *HashedWheelTimer) error {
	if h.worker == nil {
		return nil
	}
	exact := true
	for i := range h.shards {
		if !h.shards[i].reports.Empty() {
			exact = false
		}
	}
	return verifyExact(h.worker.wheel, exact)
}

// verifyExact is wheel.verify and, if exact, its bounds: no scheduled
// timeout due before its bucket's bound or the wheel's earliest, which a
// Reset's move earlier not yet refiled may break.
func verifyExact(wh *wheel, exact bool) error {
	if err := wh.verify(); err != nil || !exact {
		return err
	}
	for i := range wh.buckets {
		b := &wh.buckets[i]
		for t := b.head; t != nil; t = t.next {
			w := t.word.Load()
			tick := deadlineOf(w) / wh.tickDuration
			switch {
			case w&stateMask != stateScheduled || tick < wh.tick:
			case tick < b.minDue:
				return fmt.Errorf("bucket %d holds %v due in tick %d, before its bound %d", i, t, tick, b.minDue)
			case tick < wh.earliest:
				return fmt.Errorf("%v is due in tick %d, before earliest %d", t, tick, wh.earliest)
			}
		}
	}
	return nil
}

// TestWheelVerifyFindsBrokenInvariants breaks the wheel in each way verify
// looks for and checks that it reports it; a bound by deadline only when
// exact.
func TestWheelVerifyFindsBrokenInvariants(t *testing.T) {
	cases := []struct {
		name   string
		exact  bool // the damage is reported only by an exact check
		damage func(wh *wheel, to *timeout)
	}{
		{"size", false, func(wh *wheel, _ *timeout) { wh.size++ }},
		{"occupied bit", false, func(wh *wheel, to *timeout) { wh.occupied[0] &^= 1 << (to.bucket - 1) }},
		{"bucket recorded", false, func(_ *wheel, to *timeout) { to.bucket++ }},
		{"back link", false, func(_ *wheel, to *timeout) { to.prev = to }},
		{"state", false, func(_ *wheel, to *timeout) { to.word.Store(to.word.Load()&^stateMask | stateExpired) }},
		{"bucket bound", true, func(wh *wheel, to *timeout) { wh.buckets[to.bucket-1].minDue = wh.tick + 5 }},
		{"earliest", true, func(wh *wheel, _ *timeout) { wh.earliest = wh.tick + 5 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wh := newWheel(8, wheelTick)
			to := newTestTimeout(inTick(3))
			require.True(t, insert(wh, to))
			require.NoError(t, verifyExact(wh, true), "before the damage")
			c.damage(wh, to)
			assert.Error(t, verifyExact(wh, true))
			if c.exact {
				assert.NoError(t, verifyExact(wh, false), "a bound by deadline is checked only when exact")
			} else {
				assert.Error(t, verifyExact(wh, false))
			}
		})
	}
}
