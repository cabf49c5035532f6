package clock

import "time"

// Timer is a time.Timer of a Clock, made by its NewTimer or After: on a
// Real, the runtime's; on a Fake, one that fires when Advance or Jump
// moves the clock to its deadline, in deadline order with everything else
// due on the clock. Both keep Go 1.23's semantics: once Stop or Reset
// returns, no value from before the call is received from C.
type Timer struct {
	// C receives the clock's time once the timer fires.
	C <-chan time.Time

	real *time.Timer
	fake *fakeChan
}

// Stop prevents the timer from firing. It returns true if the call stopped
// it, false if it had already fired and its value was received, or had
// been stopped; a value not yet received is discarded, and Stop returns
// true, as time.Timer's does since Go 1.23.
func (t *Timer) Stop() bool {
	if t.fake != nil {
		return t.fake.stop()
	}
	return t.real.Stop()
}

// Reset changes the timer to fire d from now, discarding a value not yet
// received, and reports whether the timer was active, as Stop would.
func (t *Timer) Reset(d time.Duration) bool {
	if t.fake != nil {
		return t.fake.reset(d, 0)
	}
	return t.real.Reset(d)
}

// Chan returns C, as clockwork's Timer does, so that code written against
// clockwork moves over unchanged.
func (t *Timer) Chan() <-chan time.Time { return t.C }

// Ticker is a time.Ticker of a Clock, made by its NewTicker: on a Real,
// the runtime's; on a Fake, one that ticks when Advance or Jump moves the
// clock past each period. C holds one tick; a tick due while it is full is
// dropped, as time.Ticker drops ticks for a slow receiver. Once Stop or
// Reset returns, no tick from before the call is received, as with Go
// 1.23's time.Ticker.
type Ticker struct {
	// C receives the clock's time at each tick.
	C <-chan time.Time

	real *time.Ticker
	fake *fakeChan
}

// Stop turns the ticker off: no tick is sent after it returns, and a tick
// not yet received is discarded. It does not close C.
func (t *Ticker) Stop() {
	if t.fake != nil {
		t.fake.stop()
		return
	}
	t.real.Stop()
}

// Reset stops the ticker and makes d its period, the next tick d from
// now. It panics for d <= 0, as time.Ticker's Reset does.
func (t *Ticker) Reset(d time.Duration) {
	if t.fake != nil {
		if d <= 0 {
			panic("clock: non-positive interval for Ticker.Reset")
		}
		t.fake.reset(d, d)
		return
	}
	t.real.Reset(d)
}

// Chan returns C, as clockwork's Ticker does, so that code written against
// clockwork moves over unchanged.
func (t *Ticker) Chan() <-chan time.Time { return t.C }
