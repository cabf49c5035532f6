package hashedwheel

import (
	"errors"
	"time"
)

// afterFallback is After's channel when the timer refused it with err,
// sent on by the clock's own timer, or in a bubble, the bubble's.
func (h *HashedWheelTimer) afterFallback(delay time.Duration, err error) <-chan time.Time {
	if errors.Is(err, ErrSynctestBubble) {
		h.counters.chanFallbacks.Add(1)
		return time.After(delay)
	}
	c := make(chan time.Time, 1)
	s := &chanSender{h: h, c: c}
	s.mu.Lock()
	s.armClock(delay, 0)
	s.mu.Unlock()
	return c
}

// bubbleProbe is read outside testing/synctest bubbles: their clocks start
// in 2000, behind it.
var bubbleProbe = time.Now()

// inABubble reports whether the caller runs in a testing/synctest bubble.
func inABubble() bool { return time.Since(bubbleProbe) < 0 }
