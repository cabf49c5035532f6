package hashedwheel

import (
	"errors"
	"time"
)

// What runs on the clock's own timers: the deadlines the wheel cannot
// keep, of contexts and channel timers made while the timer is stopped or
// at its limit, or live at Stop, and the check that tells a
// testing/synctest bubble the timer may not be used in. Only this file and
// context.go read the runtime's clock.

// afterFallback is After's channel when the timer refused the arming with
// err: a timer of the clock's own sends on it after delay, or, in a
// testing/synctest bubble the timer may not be used in, a runtime timer
// of the bubble's, whose goroutines may send on the bubble's channels.
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

// bubbleProbe is a reading of the runtime's clock made outside any
// testing/synctest bubble (at the package's initialisation): inside one,
// whose clock starts in the year 2000, the time since it is negative.
var bubbleProbe = time.Now()

// inABubble reports whether the caller runs in a testing/synctest bubble,
// at the cost of a reading of the runtime's clock: a timer made outside
// every bubble, on a clock not the runtime's, checks each schedule. On the
// runtime's clock the timer's own reading tells (it is negative there).
func inABubble() bool { return time.Since(bubbleProbe) < 0 }
