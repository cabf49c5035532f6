package clock_test

import (
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
)

// A Fake reads the time it was made with until a test moves it.
func ExampleNewFake() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	fmt.Println(fake.Now().Format(time.TimeOnly), fake.Nanotime())
	fake.Advance(30 * time.Minute)
	fmt.Println(fake.Now().Format(time.TimeOnly), time.Duration(fake.Nanotime()))
	// Output:
	// 09:00:00 0
	// 09:30:00 30m0s
}

// A timer's worker sleeps on a Sleeper of its clock; on a Fake, Advance
// stops at each instant a sleeper waits for, in order, and returns once
// the sleepers are asleep again. The goroutine here stands for a timer's
// worker with work due at 10, 20 and 45 minutes, which then stops.
func ExampleFake_Advance() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	sleeper := fake.NewSleeper()
	woke := make(chan string, 3)
	go func() {
		defer sleeper.Close() // a worker that ends detaches its sleeper: Advance waits for no one
		for _, due := range []time.Duration{10 * time.Minute, 20 * time.Minute, 45 * time.Minute} {
			for fake.Nanotime() < int64(due) {
				sleeper.Sleep(int64(due)) // may return early: check again
			}
			woke <- fake.Now().Format(time.TimeOnly)
		}
	}()
	fake.WaitAsleep() // the worker waits for its first instant

	fake.Advance(30 * time.Minute)
	fmt.Println("now", fake.Now().Format(time.TimeOnly), "next wake-up in",
		time.Duration(fake.SleepingUntil()-fake.Nanotime()))
	fmt.Println("woke at", <-woke, "and", <-woke)
	fake.Advance(15 * time.Minute)
	fmt.Println("woke at", <-woke)
	// Output:
	// now 09:30:00 next wake-up in 15m0s
	// woke at 09:10:00 and 09:20:00
	// woke at 09:45:00
}

// Real is the runtime's clock: Now is time.Now, and Nanotime counts the
// monotonic nanoseconds since the clock was made, unmoved by a step of the
// wall clock.
func ExampleNewReal() {
	c := clock.NewReal()
	before := c.Nanotime()
	time.Sleep(time.Millisecond)
	fmt.Println("monotonic:", c.Nanotime()-before >= int64(time.Millisecond))
	// Output: monotonic: true
}
