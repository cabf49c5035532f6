package clock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
)

// waitReady is application code that takes a clock.Clock where it took a
// clockwork.Clock: it checks ready every second, on a ticker, and gives up
// after a minute, on After.
func waitReady(clk clock.Clock, ready func() bool) error {
	ticker := clk.NewTicker(time.Second)
	defer ticker.Stop()
	timeout := clk.After(time.Minute)
	for !ready() {
		select {
		case <-ticker.Chan():
		case <-timeout:
			return errors.New("not ready within a minute")
		}
	}
	return nil
}

// A test written for clockwork's fake clock moves over by changing its
// import, and clockwork.NewFakeClockAt(start) to clock.NewFake(start):
// a goroutine that sleeps, a select on After and a ticker, waited for with
// BlockUntilContext and moved with Advance. Advance sends on the channels
// due and goes on, so the test waits for each goroutine's own signal.
func Example_clockwork() {
	fakeClock := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A goroutine that sleeps.
	woke := make(chan time.Time)
	go func() {
		fakeClock.Sleep(30 * time.Second)
		woke <- fakeClock.Now()
	}()
	if err := fakeClock.BlockUntilContext(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	fakeClock.Advance(30 * time.Second)
	fmt.Println("woke at", (<-woke).Format(time.TimeOnly))

	// A ticker and a select on After: ready at the third check. Each check
	// signals the test, which advances to the next tick only then.
	checked := make(chan int)
	done := make(chan error)
	go func() {
		checks := 0
		done <- waitReady(fakeClock, func() bool { checks++; checked <- checks; return checks == 3 })
	}()
	<-checked // the first check, before any tick
	fakeClock.Advance(time.Second)
	<-checked
	fakeClock.Advance(time.Second)
	fmt.Println("check", <-checked, "ready:", <-done, "at", fakeClock.Now().Format(time.TimeOnly))

	// Never ready: After ends the wait at the minute. The first call's
	// After is still armed, as time.After's timer would be: wait for two
	// waiters beyond those already there.
	base := fakeClock.Waiters()
	go func() { done <- waitReady(fakeClock, func() bool { return false }) }()
	if err := fakeClock.BlockUntilContext(ctx, base+2); err != nil { // its ticker and After
		fmt.Println(err)
		return
	}
	fakeClock.Advance(time.Minute)
	fmt.Println(<-done, "at", fakeClock.Now().Format(time.TimeOnly))
	// Output:
	// woke at 09:00:30
	// check 3 ready: <nil> at 09:00:32
	// not ready within a minute at 09:01:32
}
