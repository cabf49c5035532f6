package clock

import "github.com/wheeltimer/wheeltimer/internal/clockwork"

// init lends the timer the clocks' side of the handshake: the sleepers of
// any Clock, and the instant a Fake's sleepers wait for, for the tests.
func init() {
	clockwork.Register(clockwork.Clock{
		NewSleeper:    func(c any) clockwork.Sleeper { return c.(Clock).newSleeper() },
		SleepingUntil: func(fake any) int64 { return fake.(*Fake).lockedSleepingUntil() },
	})
}
