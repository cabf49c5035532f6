package clock_test

import (
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
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

// A timer on a Fake runs on fake time: Advance stops at each instant a
// timeout is due, in order, runs what came due there, and returns once
// those tasks have returned; each task reads the time it was due at.
func ExampleFake_Advance() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	for _, due := range []time.Duration{10 * time.Minute, 20 * time.Minute, 45 * time.Minute} {
		if _, err := timer.AfterFunc(due, func() {
			fmt.Println("ran at", fake.Now().Format(time.TimeOnly))
		}); err != nil {
			panic(err)
		}
	}

	fake.Advance(30 * time.Minute)
	fmt.Println("now", fake.Now().Format(time.TimeOnly))
	fake.Advance(15 * time.Minute)
	// Output:
	// ran at 09:10:00
	// ran at 09:20:00
	// now 09:30:00
	// ran at 09:45:00
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
