package clock

import "github.com/wheeltimer/wheeltimer/internal/clockwork"

// init lends the timer the clocks' side of the handshake: the sleepers of
// any Clock, the check that refuses a clock that cannot keep time, and
// the instant a Fake's sleepers wait for, for the tests.
func init() {
	clockwork.Register(clockwork.Clock{
		NewSleeper:    func(c any) clockwork.Sleeper { return c.(Clock).newSleeper() },
		Check:         func(c any) error { return c.(Clock).check() },
		SleepingUntil: func(fake any) int64 { return fake.(*Fake).lockedSleepingUntil() },
	})
}
