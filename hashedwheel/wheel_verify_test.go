package hashedwheel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verifyWheel checks h's wheel, exactly unless a report, of a Reset that
// may have moved a deadline earlier, is still queued. Call it only while
// h's worker is asleep or gone.
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
	return h.worker.wheel.verify(exact)
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
			require.NoError(t, wh.verify(true), "before the damage")
			c.damage(wh, to)
			assert.Error(t, wh.verify(true))
			if c.exact {
				assert.NoError(t, wh.verify(false), "a bound by deadline is checked only when exact")
			} else {
				assert.Error(t, wh.verify(false))
			}
		})
	}
}
