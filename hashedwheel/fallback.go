package hashedwheel

import (
	"errors"
	"time"
)

// afterFallback is After's channel when the timer refused it with err: a
// timer of the clock's own sends on it, or in a testing/synctest bubble the
// timer may not be used in, one of the bubble's.
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

// bubbleProbe is read outside any testing/synctest bubble: inside one,
// whose clock starts in 2000, the time since it is negative.
var bubbleProbe = time.Now()

// inABubble reports whether the caller runs in a testing/synctest bubble.
func inABubble() bool { return time.Since(bubbleProbe) < 0 }
