package clock

import (
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clockwork"
)

// fakeWaiter is what waits on a Fake for an instant of its Nanotime: a
// function of AfterFunc, or the channel of a Timer, a Ticker, After or
// Sleep. It is in Fake.waiters from the time it is armed until it fires
// (a one-shot) or is stopped.
type fakeWaiter struct {
	at     int64          // the instant it is due at
	fn     func()         // AfterFunc's: called without the lock
	c      chan time.Time // a Timer's or Ticker's: sent the time, never blocking
	period int64          // a Ticker's period, re-arming it; 0 for a one-shot
}

// addWaiter arms w, under the lock, and tells BlockUntilContext.
func (f *Fake) addWaiter(w *fakeWaiter) {
	f.waiters = append(f.waiters, w)
	f.changed.Broadcast()
}

// removeWaiter disarms w, under the lock, reporting whether it was armed.
func (f *Fake) removeWaiter(w *fakeWaiter) bool {
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// instantAfter returns the instant d from now, under the lock: now for
// d <= 0, clockwork.Forever for a d too large to represent.
func (f *Fake) instantAfter(d time.Duration) int64 {
	if d <= 0 {
		return f.elapsed
	}
	if int64(d) > clockwork.Forever-f.elapsed {
		return clockwork.Forever
	}
	return f.elapsed + int64(d)
}

// nextWaiter returns the instant of the first waiter due, or
// clockwork.Forever.
func (f *Fake) nextWaiter() int64 {
	next := clockwork.Forever
	for _, w := range f.waiters {
		next = min(next, w.at)
	}
	return next
}

// runDue fires the waiters due by now, in the order of their instants,
// those of one instant in the order they were armed: it calls a function
// of AfterFunc without the lock, and sends the time on a channel under it,
// never blocking, a Ticker then re-armed for its next period after now.
func (f *Fake) runDue() {
	for {
		var first *fakeWaiter
		for _, w := range f.waiters {
			if w.at <= f.elapsed && (first == nil || w.at < first.at) {
				first = w
			}
		}
		switch {
		case first == nil:
			return
		case first.fn != nil:
			f.removeWaiter(first)
			f.mu.Unlock()
			first.fn()
			f.mu.Lock()
		default:
			f.send(first.c)
			if first.period > 0 {
				first.at += first.period * (1 + (f.elapsed-first.at)/first.period)
			} else {
				f.removeWaiter(first)
			}
		}
	}
}

// send sends the time on c, under the lock, unless c holds a value
// already, which a receiver has not taken yet.
func (f *Fake) send(c chan time.Time) {
	select {
	case c <- f.start.Add(time.Duration(f.elapsed)):
	default:
	}
}

// AfterFunc calls fn once the clock has moved d ahead, on the goroutine of
// the Advance or Jump that gets it there, before Advance returns, as
// time.AfterFunc does on the runtime's clock; a d of zero or less calls it
// at the next Advance or Jump. The returned stop prevents the call,
// reporting whether it did. hashedwheel keeps with it the deadline of a
// context it cannot keep on its wheel (a stopped or full timer), so that
// the context follows the fake clock too.
func (f *Fake) AfterFunc(d time.Duration, fn func()) (stop func() bool) {
	w := &fakeWaiter{fn: fn}
	f.mu.Lock()
	w.at = f.instantAfter(d)
	f.addWaiter(w)
	f.mu.Unlock()
	return func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.removeWaiter(w)
	}
}

// Since returns the fake time elapsed since t: Now().Sub(t).
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// Until returns the fake duration until t: t.Sub(Now()).
func (f *Fake) Until(t time.Time) time.Duration { return t.Sub(f.Now()) }

// Sleep blocks until the clock has moved d ahead: until Advance or Jump
// gets it there. It returns at once for d <= 0. A sleeping goroutine is a
// waiter that BlockUntilContext counts.
func (f *Fake) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	<-f.NewTimer(d).C
}

// After returns NewTimer(d).C.
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C }

// NewTimer returns a Timer that sends the fake time on its channel once
// Advance or Jump moves the clock d ahead, or at once for d <= 0.
func (f *Fake) NewTimer(d time.Duration) *Timer {
	fc := &fakeChan{clock: f, c: make(chan time.Time, 1)}
	fc.reset(d, 0)
	return &Timer{C: fc.c, fake: fc}
}

// NewTicker returns a Ticker that sends the fake time on its channel each
// time Advance or Jump moves the clock past a multiple of d from now; it
// panics for d <= 0, as time.NewTicker does.
func (f *Fake) NewTicker(d time.Duration) *Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	fc := &fakeChan{clock: f, c: make(chan time.Time, 1)}
	fc.reset(d, d)
	return &Ticker{C: fc.c, fake: fc}
}

// fakeChan is a Fake's side of a Timer or a Ticker: its channel, with a
// buffer of one, and its waiter while armed.
type fakeChan struct {
	clock *Fake
	c     chan time.Time
	w     *fakeWaiter // the last armed; fired or stopped once out of clock.waiters
}

// stop disarms the timer and empties its channel, reporting whether it
// was armed or held a value not yet received.
func (fc *fakeChan) stop() bool {
	f := fc.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	return fc.stopLocked()
}

func (fc *fakeChan) stopLocked() bool {
	armed := fc.w != nil && fc.clock.removeWaiter(fc.w)
	select {
	case <-fc.c:
		return true
	default:
		return armed
	}
}

// reset stops the timer, then arms it d ahead with period (0: once),
// reporting what stop would have. A one-shot due at once is sent at once.
func (fc *fakeChan) reset(d time.Duration, period time.Duration) bool {
	f := fc.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	active := fc.stopLocked()
	if d <= 0 && period == 0 {
		fc.w = nil
		f.send(fc.c)
		return active
	}
	fc.w = &fakeWaiter{at: f.instantAfter(d), c: fc.c, period: int64(period)}
	f.addWaiter(fc.w)
	return active
}
