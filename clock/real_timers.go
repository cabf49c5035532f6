package clock

import "time"

// Since returns time.Since(t).
func (r *Real) Since(t time.Time) time.Duration { return time.Since(t) }

// Until returns time.Until(t).
func (r *Real) Until(t time.Time) time.Duration { return time.Until(t) }

// Sleep calls time.Sleep(d).
func (r *Real) Sleep(d time.Duration) { time.Sleep(d) }

// After returns time.After(d).
func (r *Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// NewTimer returns a Timer of time.NewTimer(d), with Go 1.23's semantics:
// once Stop or Reset returns, no value from before the call is received.
func (r *Real) NewTimer(d time.Duration) *Timer {
	t := time.NewTimer(d)
	return &Timer{C: t.C, real: t}
}

// NewTicker returns a Ticker of time.NewTicker(d); it panics for d <= 0,
// as time.NewTicker does.
func (r *Real) NewTicker(d time.Duration) *Ticker {
	t := time.NewTicker(d)
	return &Ticker{C: t.C, real: t}
}

// AfterFunc calls f on its own goroutine after d, as time.AfterFunc does,
// and returns the Stop method of the runtime's timer.
func (r *Real) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}
