package hashedwheel

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ChanTimer is time.Timer on the wheel: its time is sent on C at the first
// tick end at or after its deadline, never before it. Make one with
// NewTimer; its methods are safe for concurrent use.
//
// It keeps Go 1.23's semantics: once Stop or Reset has returned, no
// receive from C gets a time from before the call. C has a buffer of one
// (len(C) is 1 while a fired time waits), where time.Timer's reports 0.
//
// An armed ChanTimer holds a pending timeout, and with it itself, until its
// deadline, even if unreferenced (about 250 bytes): Stop one no longer
// needed, as before Go 1.23. One armed when the timer stops sends at its
// deadline on a timer of the clock's own; Stop and Reset keep working.
type ChanTimer struct {
	C <-chan time.Time
	s chanSender
}

// chanSender sends the time on a channel of one slot for one arming at a
// time: a timeout of the wheel, cur, or a timer of the clock's own, off,
// when the wheel refuses. Stop and Reset change the arming and empty the
// slot under mu, and a run sends only while its arming is current, under
// mu too: no run of an earlier arming sends after Stop or Reset returns.
type chanSender struct {
	h    *HashedWheelTimer
	c    chan time.Time
	mu   sync.Mutex
	cur  *timeout
	off  *clockArming
	sent bool // the current arming has put a time in the slot
}

// clockArming is an arming on a timer of the clock's own, due at next (on
// the timer's clock), repeating every period for a ticker.
type clockArming struct {
	s      *chanSender
	next   int64
	period int64
	stop   func() bool
}

// Run sends the time if run is the current arming and the slot is free; a
// tick that finds it full is dropped, as time.Ticker drops it.
func (s *chanSender) Run(run Timeout) {
	t, _ := run.(*timeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t != nil && t == s.cur {
		s.send()
	}
}

// send puts the time in the slot, if free. The caller holds mu.
func (s *chanSender) send() {
	select {
	case s.c <- s.h.clock.Now():
		s.sent = true
	default:
	}
}

// fire sends if a is current, and arms a ticker's next tick.
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

// disarm cancels the current arming and empties the slot, reporting
// whether a time was still to come or unreceived. The caller holds mu.
func (s *chanSender) disarm() (active bool) {
	if cur := s.cur; cur != nil {
		// A run claimed but not yet sent still counts as to come.
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

// arm arms the disarmed sender on a new timeout due after delay,
// repeating every period ns if positive; with fallback, on the clock's own
// timer if the timer is stopped or full. The caller holds mu.
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

// armClock is arm on a timer of the clock's own.
func (s *chanSender) armClock(delay time.Duration, period int64) {
	a := &clockArming{s: s, next: s.h.now() + int64(max(delay, 0)), period: period}
	s.off = a
	a.stop = s.h.clock.AfterFunc(max(delay, 0), a.fire)
	s.h.counters.chanFallbacks.Add(1)
}

// outliveStop moves the arming t, live at Stop, to the clock's own timer.
func (s *chanSender) outliveStop(t *timeout) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != t {
		return // stopped or reset meanwhile
	}
	s.cur = nil
	s.armClock(t.remaining(), t.period)
}

// errNotMade is the error of Reset on a ChanTimer or Ticker literal.
func errNotMade(what string) error {
	return fmt.Errorf("%w: a %s not made by the timer's constructor has no timer", ErrStopped, what)
}

// NewTimer returns a ChanTimer that sends the time on C after at least
// delay, like time.NewTimer; a zero or negative delay sends on the next
// tick. It starts the timer if needed and fails as NewTimeout does.
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

// After is NewTimer(delay).C, like time.After. The timer holds the channel
// until then, even if nothing receives: in a loop whose other cases win,
// use NewTimer and Stop. While the timer is stopped, full, or used in a
// testing/synctest bubble it was not started in, a timer of the clock's
// own sends after delay instead, counted in Stats.ChanFallbacks.
func (h *HashedWheelTimer) After(delay time.Duration) <-chan time.Time {
	t, err := h.NewTimer(delay)
	if err == nil {
		return t.C
	}
	return h.afterFallback(delay, err)
}

// Stop prevents the ChanTimer from sending, like time.Timer.Stop: once it
// returns, no receive from C gets a time, until a Reset. It reports
// whether it stopped a time not yet received. It blocks at most for a
// concurrent send.
func (t *ChanTimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.disarm()
}

// Reset makes the ChanTimer send the time on C after at least delay, like
// time.Timer.Reset: once it returns, no receive from C gets a time from
// before the call. It reports whether the timer was active, as Stop does.
// A Reset before firing allocates nothing. While the timer is stopped or
// full, the arming runs on a timer of the clock's own, counted in
// Stats.ChanFallbacks. Reset fails only inside a testing/synctest bubble
// the timer was not started in (ErrSynctestBubble), and on a ChanTimer
// that NewTimer did not make.
func (t *ChanTimer) Reset(delay time.Duration) (active bool, err error) {
	s := &t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		return false, errNotMade("ChanTimer")
	}
	if cur := s.cur; cur != nil && !s.sent && cur.Reset(delay) {
		return true, nil // not fired: moved
	}
	active = s.disarm()
	return active, s.arm(delay, 0, true)
}

// Ticker is time.Ticker on the wheel: it sends the time on C every period,
// at a fixed rate from its start or last Reset, each tick at the first
// tick end at or after it is due, never before. Make one with NewTicker;
// its methods are safe for concurrent use.
//
// C holds one tick; a tick that comes while one waits is dropped. Once Stop
// or Reset has returned, no receive from C gets a tick from before the
// call. A Ticker holds a pending timeout until Stop, even if unreferenced:
// Stop every Ticker, as before Go 1.23. One running when the timer stops
// goes on ticking on a timer of the clock's own.
type Ticker struct {
	C <-chan time.Time
	s chanSender
}

// NewTicker returns a Ticker whose channel C receives the time every
// period, the first one period after the call, like time.NewTicker. It
// starts the timer if needed. It fails with ErrInvalidPeriod for a period
// of zero or less, or shorter than the timer's tick, and as NewTimeout
// does otherwise; a failed call schedules nothing.
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
// receive from C gets a tick, until a Reset. It does not close C.
func (t *Ticker) Stop() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.disarm()
}

// Reset stops the Ticker and makes period its period, the next tick one
// period after the call, like time.Ticker.Reset: once it returns, no
// receive from C gets a tick from before the call. It fails, leaving the
// Ticker stopped, with ErrInvalidPeriod as NewTicker does, and with
// ErrSynctestBubble inside a testing/synctest bubble the timer was not
// started in. While the timer is stopped or full, the Ticker ticks on a
// timer of the clock's own.
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

// armTicker checks period as Every does, naming call, and arms s with it.
// The caller holds mu.
func (s *chanSender) armTicker(call string, period time.Duration, fallback bool) error {
	if err := s.h.startForPeriod(call, period); err != nil && !(fallback && errors.Is(err, ErrStopped)) {
		return err
	}
	return s.arm(period, int64(period), fallback)
}
