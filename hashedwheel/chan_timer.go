package hashedwheel

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ChanTimer is time.Timer on the wheel, with Go 1.23's semantics: once
// Stop or Reset has returned, no receive from C gets an earlier time; but
// C has a buffer of one. An armed ChanTimer is held until its deadline,
// even if unreferenced: Stop one no longer needed. One armed at the
// timer's Stop still fires. Make one with NewTimer; its methods are safe
// for concurrent use.
type ChanTimer struct {
	C <-chan time.Time
	s chanSender
}

// chanSender sends the time on c for one arming at a time: a timeout of
// the wheel, cur, or a timer of the clock's own, off. Stop and Reset
// change the arming and empty c under mu, and a run sends only while its
// arming is current, under mu: no earlier arming sends after they return.
type chanSender struct {
	h    *HashedWheelTimer
	c    chan time.Time
	mu   sync.Mutex
	cur  *timeout
	off  *clockArming
	sent bool // the current arming has put a time in the slot
}

type clockArming struct {
	s      *chanSender
	next   int64
	period int64
	stop   func() bool
}

// Run sends the time if run is the current arming.
func (s *chanSender) Run(run Timeout) {
	t, _ := run.(*timeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t != nil && t == s.cur {
		s.send()
	}
}

// send puts the time in c, unless full. The caller holds mu.
func (s *chanSender) send() {
	select {
	case s.c <- s.h.clock.Now():
		s.sent = true
	default:
	}
}

func (a *clockArming) fire() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off != a {
		return // stopped or reset meanwhile
	}
	s.send()
	if a.period > 0 {
		a.next += a.period * max((s.h.now()-a.next)/a.period+1, 1) // skipping ticks missed
		a.stop = s.h.clock.AfterFunc(time.Duration(a.next-s.h.now()), a.fire)
	}
}

// disarm cancels the arming and empties c, reporting whether a time was
// still to come or unreceived. The caller holds mu.
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

// arm arms the disarmed sender, with fallback on the clock's own timer if
// the timer is stopped or full. The caller holds mu.
func (s *chanSender) arm(delay time.Duration, period int64, fallback bool) error {
	t := &timeout{task: s}
	switch _, err := s.h.scheduleTimeout(t, delay, period); {
	case err == nil:
		s.cur = t
	case fallback && (errors.Is(err, ErrStopped) || errors.Is(err, ErrTooManyPendingTimeouts)):
		s.armClock(delay, period)
	default:
		return err
	}
	return nil
}

func (s *chanSender) armClock(delay time.Duration, period int64) {
	a := &clockArming{s: s, next: s.h.now() + int64(max(delay, 0)), period: period}
	s.off = a
	a.stop = s.h.clock.AfterFunc(max(delay, 0), a.fire)
	s.h.counters.chanFallbacks.Add(1)
}

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
// delay, like time.NewTimer. It starts the timer if needed and fails as
// NewTimeout does.
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

// After is NewTimer(delay).C, like time.After, held until it fires: in a
// loop, prefer NewTimer and Stop. When the timer refuses it, a timer of
// the clock's own sends instead (Stats.ChanFallbacks).
func (h *HashedWheelTimer) After(delay time.Duration) <-chan time.Time {
	t, err := h.NewTimer(delay)
	if err == nil {
		return t.C
	}
	return h.afterFallback(delay, err)
}

// Stop stops the ChanTimer like time.Timer.Stop, reporting whether it
// stopped a time not yet received.
func (t *ChanTimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.disarm()
}

// Reset makes the ChanTimer send the time on C after at least delay, like
// time.Timer.Reset, and reports whether it was active; before firing, it
// allocates nothing. While the timer is stopped or full, a timer of the
// clock's own keeps it (Stats.ChanFallbacks). Reset fails only with
// ErrSynctestBubble, and on a ChanTimer that NewTimer did not make.
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

// Ticker is time.Ticker on the wheel, with Go 1.23's semantics; a tick
// never comes before it is due. A Ticker is held until Stop, even if
// unreferenced: Stop every Ticker. One running at the timer's Stop goes on
// ticking. Make one with NewTicker; its methods are safe for concurrent
// use.
type Ticker struct {
	C <-chan time.Time
	s chanSender
}

// NewTicker returns a Ticker that sends the time on C every period, like
// time.NewTicker. It fails with ErrInvalidPeriod as Every does, and as
// NewTimeout does otherwise.
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

// Stop turns off the Ticker, like time.Ticker.Stop.
func (t *Ticker) Stop() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.disarm()
}

// Reset stops the Ticker and restarts it with period, like
// time.Ticker.Reset. It fails, leaving it stopped, with ErrInvalidPeriod
// or ErrSynctestBubble. While the timer is stopped or full, a timer of the
// clock's own keeps it.
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

// armTicker checks period as Every does, and arms s. The caller holds mu.
func (s *chanSender) armTicker(call string, period time.Duration, fallback bool) error {
	if err := s.h.startForPeriod(call, period); err != nil && !(fallback && errors.Is(err, ErrStopped)) {
		return err
	}
	return s.arm(period, int64(period), fallback)
}
