package hashedwheel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// A clockwork-style test on clock.Fake: the code under test schedules on
// a goroutine of its own, the test waits until it has (BlockUntilContext,
// counting from the waiters already on the clock), then advances the
// clock to the deadline exactly; Advance returns once what came due has
// run.
func ExampleHashedWheelTimer_fakeClock() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	flush, err := timer.Every(time.Minute, func() {}) // a waiter already there
	if err != nil {
		panic(err)
	}
	defer flush.Cancel()

	base := fake.Waiters()
	result := make(chan error, 1)
	go func() { // the code under test: a request with a 100ms deadline
		ctx, cancel := timer.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		<-ctx.Done()
		result <- ctx.Err()
	}()

	wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.BlockUntilContext(wait, base+1); err != nil { // the deadline is scheduled
		fmt.Println(err)
		return
	}
	fake.Advance(99 * time.Millisecond)
	fake.Advance(time.Millisecond) // the deadline, exactly
	fmt.Println(<-result, timer.Now().Format(time.TimeOnly+".000"))
	// Output: context deadline exceeded 09:00:00.100
}
