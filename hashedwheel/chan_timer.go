package hashedwheel

import (
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
type ChanTimer struct {
	C <-chan time.Time
	s chanSender
}

// chanSender sends the time on a channel of one slot for the runs of one
// timeout at a time, cur: Stop and Reset change cur and empty the slot
// under mu, and a run sends only while its timeout is cur, under mu too,
// so that no run of an earlier arming, even one already started, sends
// after Stop or Reset returns.
type chanSender struct {
	h    *HashedWheelTimer
	c    chan time.Time
	mu   sync.Mutex
	cur  *timeout // the arming whose runs may send; nil once stopped
	sent bool     // cur's run has put a time in the slot
}

// Run sends the timer's time on the channel if run is the current
// arming and the slot is free; a ticker's tick that finds the slot full
// is dropped, as time.Ticker drops it.
func (s *chanSender) Run(run Timeout) {
	t, _ := run.(*timeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t == nil || t != s.cur {
		return // a run of an arming that Stop or Reset has replaced
	}
	select {
	case s.c <- s.h.clock.Now():
		s.sent = true
	default:
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
	select {
	case <-s.c:
		active = true
	default:
	}
	s.sent = false
	return active
}

// arm makes the current arming a new timeout of the timer, due after
// delay, repeating every period nanoseconds if period is positive. The
// caller holds mu, which the timeout's runs wait for, and cur is nil.
func (s *chanSender) arm(delay time.Duration, period int64) error {
	t, err := s.h.schedule(s, delay, period)
	if err != nil {
		return err
	}
	s.cur = t
	return nil
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
	if err := t.s.arm(delay, 0); err != nil {
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
// While the timer is stopped, or at its WithMaxPendingTimeouts limit,
// After returns a closed channel: a receive completes at once with the
// zero time and ok false, so a select's timeout case wins and nothing
// waits forever, nor on another clock than the timer's. Stats counts the
// refusal in RejectedStopped or RejectedFull; NewTimer returns it as an
// error.
func (h *HashedWheelTimer) After(delay time.Duration) <-chan time.Time {
	t, err := h.NewTimer(delay)
	if err != nil {
		return closedTimeChan
	}
	return t.C
}

// closedTimeChan is After's channel when the timer refuses it.
var closedTimeChan = func() chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

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
// If the timer refuses a new arming, because it was stopped
// (ErrStopped) or holds WithMaxPendingTimeouts timeouts
// (ErrTooManyPendingTimeouts), Reset returns the error and the ChanTimer
// stays stopped.
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
	return active, s.arm(delay, 0)
}
