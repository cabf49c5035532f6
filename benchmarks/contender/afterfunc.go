package contender

import "time"

// afterFunc is the Go runtime's timer: a per-P 4-ary heap, one goroutine
// started per expiry.
type afterFunc struct{}

func afterFuncContender() Contender {
	return Contender{
		Name:       Baseline,
		NeverEarly: true,
		Executor:   "a new goroutine per expiry",
		Note:       "the runtime's per-P 4-ary timer heaps",
		New:        func(Config) (Timer, error) { return afterFunc{}, nil },
	}
}

func (afterFunc) Schedule(delay time.Duration, f func()) (Handle, error) {
	return time.AfterFunc(delay, f), nil
}

func (afterFunc) Cancel(h Handle) bool { return h.(*time.Timer).Stop() }

// Rearm is time.Timer.Reset, which moves the runtime timer in place.
func (afterFunc) Rearm(h Handle, delay time.Duration) (Handle, error) {
	h.(*time.Timer).Reset(delay)
	return h, nil
}

func (afterFunc) Close() {}
