package hashedwheel

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ChanTimer is time.Timer on the wheel: a single event, whose time is
// sent on C at the first tick end at or after its deadline, never before it.
// Make one with NewTimer; its methods are safe for concurrent use.
//
// It keeps Go 1.23's semantics: once Stop or Reset has returned, no
// receive from C gets a time from before the call, and Stop reports true
// while a time has not been received. C has a buffer of one, where
// time.Timer's reports a capacity of 0: len(C) is 1 while a fired time
// waits for its receiver.
//
// A ChanTimer that is neither stopped nor fired holds one pending timeout
// of the timer, and with it the ChanTimer and C, until its deadline, even
// if nothing refers to it any more, as time.AfterFunc's timer does: about
// 250 bytes each, the B/op of BenchmarkNewTimerStop. Stop one that is no
// longer needed, as before Go 1.23.
//
// A ChanTimer armed when the timer stops keeps its deadline on a timer of
// the clock's own and still sends at it, as a context of WithDeadline
// still ends at its deadline; its Stop and Reset keep working.
type ChanTimer struct {
	C <-chan time.Time
	s chanSender
}

// chanSender sends the time on a channel of one slot for the runs of one
// arming at a time: a timeout of the wheel, cur, or, when the wheel cannot
// keep it (the timer is stopped, or at its limit), a timer of the clock's
// own, off. Stop and Reset change the arming and empty the slot under mu,
// and a run sends only while its arming is current, under mu too, so that
// no run of an earlier arming, even one already started, sends after Stop
// or Reset returns.
type chanSender struct {
	h    *HashedWheelTimer
	c    chan time.Time
	mu   sync.Mutex
	cur  *timeout     // the wheel's arming whose runs may send; nil if none
	off  *clockArming // the clock's arming that may send; nil if none
	sent bool         // the current arming has put a time in the slot
}

// clockArming is an arming of a chanSender on a timer of the clock's own:
// it sends at next, a reading of the timer's clock, and, for a ticker,
// every period after.
type clockArming struct {
	s      *chanSender
	next   int64
	period int64
	stop   func() bool
}

// Run sends the timer's time on the channel if run is the current
// arming and the slot is free; a ticker's tick that finds the slot full
// is dropped, as time.Ticker drops it.
func (s *chanSender) Run(run Timeout) {
	t, _ := run.(*timeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t != nil && t == s.cur {
		s.send()
	}
}

// send puts the time in the slot, if it is free. The caller holds mu.
func (s *chanSender) send() {
	select {
	case s.c <- s.h.clock.Now():
		s.sent = true
	default:
	}
}

// fire is a run of a clock arming: it sends if a is current, and arms the
// next tick of a ticker.
func (a *clockArming) fire() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off != a {
		return // stopped or reset meanwhile
	}
	s.send()
	if a.period > 0 {
		a.next += a.period * max((s.h.now()-a.next)/a.period+1, 1) // at its rate, skipping ticks missed
		a.stop = s.h.clock.AfterFunc(time.Duration(a.next-s.h.now()), a.fire)
	}
}

// disarm cancels the current arming and empties the slot. It reports
// whether a time was still to come or unreceived: the arming had neither
// been cancelled nor had its time received. The caller holds mu.
func (s *chanSender) disarm() (active bool) {
	if cur := s.cur; cur != nil {
		// A failed Cancel: the run is claimed or done. Until it has sent,
		// the time is still to come, as with a time.Timer in the act of
		// sending; once sent, the slot tells.
		active = cur.Cancel() || (!s.sent && !cur.IsCancelled())
		s.cur = nil
	}
	if off := s.off; off != nil {
		active = off.stop() || active
		s.off = nil
	}
	select {
	case <-s.c:
		active = true
	default:
	}
	s.sent = false
	return active
}

// arm makes the current arming a new timeout of the timer, due after
// delay, repeating every period nanoseconds if period is positive; if the
// timer is stopped or at its limit and fallback is set, a timer of the
// clock's own. The caller holds mu, which the timeout's runs wait for,
// and the sender is disarmed.
func (s *chanSender) arm(delay time.Duration, period int64, fallback bool) error {
	t, err := s.h.schedule(s, delay, period)
	switch {
	case err == nil:
		s.cur = t
	case fallback && (errors.Is(err, ErrStopped) || errors.Is(err, ErrTooManyPendingTimeouts)):
		s.armClock(delay, period)
	default:
		return err
	}
	return nil
}

// armClock arms the sender on a timer of the clock's own, due after
// delay, repeating every period nanoseconds if period is positive. The
// caller holds mu, and the sender is disarmed.
func (s *chanSender) armClock(delay time.Duration, period int64) {
	a := &clockArming{s: s, next: s.h.now() + int64(max(delay, 0)), period: period}
	s.off = a
	a.stop = s.h.clock.AfterFunc(max(delay, 0), a.fire)
	s.h.counters.chanFallbacks.Add(1)
}

// outliveStop moves the sender's arming t, live at Stop, to a timer of the
// clock's own, due when t was, so that the channel timer still sends.
func (s *chanSender) outliveStop(t *timeout) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != t {
		return // stopped or reset meanwhile
	}
	s.cur = nil
	s.armClock(t.remaining(), t.period)
}

// errNotMade is the error of Reset on a ChanTimer or Ticker that its
// constructor did not make, which no timer drives.
func errNotMade(what string) error {
	return fmt.Errorf("%w: a %s not made by the timer's constructor has no timer", ErrStopped, what)
}

// NewTimer returns a ChanTimer that sends the time on its channel C after
// at least delay, like time.NewTimer: at the first tick end at or after
// the deadline, never before it. A zero or negative delay sends on the next
// tick. It starts the timer if needed and fails as NewTimeout does, with
// ErrStopped after Stop and ErrTooManyPendingTimeouts at the limit.
func (h *HashedWheelTimer) NewTimer(delay time.Duration) (*ChanTimer, error) {
	c := make(chan time.Time, 1)
	t := &ChanTimer{C: c, s: chanSender{h: h, c: c}}
	t.s.mu.Lock() // the run may come before arm has set cur
	defer t.s.mu.Unlock()
	if err := t.s.arm(delay, 0, false); err != nil {
		return nil, err
	}
	return t, nil
}

// After waits for delay to elapse and then sends the time on the returned
// channel, like time.After: it is NewTimer(delay).C. The timer holds the
// channel until then, even if nothing receives from it (see ChanTimer):
// in a loop whose other cases win, use NewTimer and Stop, or Reset one
// ChanTimer.
//
// While the timer is stopped, or at its WithMaxPendingTimeouts limit, or
// used in a testing/synctest bubble it was not started in, After cannot
// put the channel on the wheel: a timer of the clock's own sends on it
// instead, after delay (the runtime's, or a clock.Fake's), and Stats
// counts it in ChanFallbacks. A refusal is never an expiry.
func (h *HashedWheelTimer) After(delay time.Duration) <-chan time.Time {
	t, err := h.NewTimer(delay)
	if err == nil {
		return t.C
	}
	return h.afterFallback(delay, err)
}

// Stop prevents the ChanTimer from sending, like time.Timer.Stop: once it
// returns, no receive from C gets a time, until a Reset. It returns true
// if the call stopped the timer, its time not yet received, and false if
// the time was received or the timer was already stopped, by Stop or by
// the timer's Stop. It never blocks for longer than a concurrent send.
func (t *ChanTimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.disarm()
}

// Reset makes the ChanTimer send the time on C after at least delay, as
// time.Timer.Reset does: once it returns, no receive from C gets a time
// from before the call. It reports whether the timer was active, as Stop
// does, whether or not it fired or was stopped before: a fired or stopped
// ChanTimer is armed anew. A Reset of a timer not yet fired allocates
// nothing.
//
// While the timer is stopped, or at its WithMaxPendingTimeouts limit, the
// new arming runs on a timer of the clock's own (the runtime's, or a
// clock.Fake's), counted in Stats.ChanFallbacks: a ChanTimer, once made,
// never needs a place its owner's Stop or Cancel did not free, and keeps
// working after the timer's Stop. Reset fails only inside a
// testing/synctest bubble the timer was not started in
// (ErrSynctestBubble), and on a ChanTimer that NewTimer did not make.
func (t *ChanTimer) Reset(delay time.Duration) (active bool, err error) {
	s := &t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		return false, errNotMade("ChanTimer")
	}
	if cur := s.cur; cur != nil && !s.sent && cur.Reset(delay) {
		return true, nil // not fired: moved, and its one run is still to come
	}
	active = s.disarm()
	return active, s.arm(delay, 0, true)
}

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
