package hashedwheel

import (
	"errors"
	"time"
)

// Ticker is time.Ticker on the wheel: it sends the time on C every
// period, at fixed rate from its start or last Reset, each tick at the
// first tick end at or after it is due, never before. Make one with NewTicker;
// its methods are safe for concurrent use.
//
// C holds one tick, as time.Ticker's does: a tick that comes while one
// waits for a slow receiver is dropped. It keeps Go 1.23's semantics: once
// Stop or Reset has returned, no receive from C gets a tick from before
// the call.
//
// A Ticker holds one pending timeout of the timer until Stop, even if
// nothing refers to it any more, where Go 1.23 collects an unreferenced
// time.Ticker: about 250 bytes, and a run on every period. Stop every
// Ticker, as before Go 1.23.
//
// A Ticker running when the timer stops goes on ticking, at its rate, on
// a timer of the clock's own, as a time.Ticker does, until its Stop; its
// Reset keeps working.
type Ticker struct {
	C <-chan time.Time
	s chanSender
}

// NewTicker returns a Ticker whose channel C receives the time every
// period, the first tick one period after the call, like time.NewTicker.
// It starts the timer if needed. It fails with ErrInvalidPeriod for a
// period of zero or less, where time.NewTicker panics, or shorter than the
// timer's tick, which the wheel could not keep, and as NewTimeout does
// otherwise; a failed call schedules nothing.
func (h *HashedWheelTimer) NewTicker(period time.Duration) (*Ticker, error) {
	c := make(chan time.Time, 1)
	t := &Ticker{C: c, s: chanSender{h: h, c: c}}
	t.s.mu.Lock() // the run may come before arm has set cur
	defer t.s.mu.Unlock()
	if err := t.s.armTicker("NewTicker", period, false); err != nil {
		return nil, err
	}
	return t, nil
}

// Stop turns off the Ticker, like time.Ticker.Stop: once it returns, no
// receive from C gets a tick, until a Reset. It does not close C. It never
// blocks for longer than a concurrent send.
func (t *Ticker) Stop() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.disarm()
}

// Reset stops the Ticker and makes period its period, the next tick one
// period after the call, like time.Ticker.Reset: once it returns, no
// receive from C gets a tick from before the call. It fails, leaving the
// Ticker stopped, with ErrInvalidPeriod as NewTicker does, where
// time.Ticker.Reset panics, and with ErrSynctestBubble inside a
// testing/synctest bubble the timer was not started in. While the timer
// is stopped or at its limit, the Ticker ticks on a timer of the clock's
// own, as ChanTimer.Reset arms. Each Reset makes a new timeout, in the
// place its own Stop freed.
func (t *Ticker) Reset(period time.Duration) error {
	s := &t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		return errNotMade("Ticker")
	}
	s.disarm()
	return s.armTicker("Reset", period, true)
}

// armTicker checks period as Every does, naming the call, and arms s with
// it, on the clock's own timer too if fallback is set and the timer is
// stopped or at its limit. The caller holds mu, and s is disarmed.
func (s *chanSender) armTicker(call string, period time.Duration, fallback bool) error {
	if err := s.h.startForPeriod(call, period); err != nil && !(fallback && errors.Is(err, ErrStopped)) {
		return err
	}
	return s.arm(period, int64(period), fallback)
}
