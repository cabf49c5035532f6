package hashedwheel_test

import (
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// closeWhenIdle prints each message until none comes for 50ms. Reset
// fails only where the timer may not be used (a testing/synctest bubble
// it was not made in): the loop returns the error rather than panicking.
func closeWhenIdle(timer *hashedwheel.HashedWheelTimer, messages <-chan string) error {
	idle, err := timer.NewTimer(50 * time.Millisecond)
	if err != nil {
		return err
	}
	defer idle.Stop()
	for {
		select {
		case m := <-messages:
			fmt.Println(m)
			if _, err := idle.Reset(50 * time.Millisecond); err != nil {
				return err
			}
		case <-idle.C:
			fmt.Println("idle: closing")
			return nil
		}
	}
}

// NewTimer is time.NewTimer on the wheel: a select waits on its channel,
// and Reset re-arms it, here as an idle connection's timer is pushed back
// by each message. After Stop or Reset returns, no old value is received.
func ExampleHashedWheelTimer_NewTimer() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	messages := make(chan string, 2)
	messages <- "hello"
	messages <- "again"
	if err := closeWhenIdle(timer, messages); err != nil {
		fmt.Println(err)
	}
	// Output:
	// hello
	// again
	// idle: closing
}

// After is time.After on the wheel, for a select with a timeout.
func ExampleHashedWheelTimer_After() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	reply := make(chan string) // nobody answers
	select {
	case r := <-reply:
		fmt.Println(r)
	case <-timer.After(20 * time.Millisecond):
		fmt.Println("timed out")
	}
	// Output: timed out
}

// NewTicker is time.NewTicker on the wheel; its period is at least the
// tick. Stop it when done: the wheel holds a Ticker until then.
func ExampleHashedWheelTimer_NewTicker() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	ticker, err := timer.NewTicker(20 * time.Millisecond)
	if err != nil {
		panic(err)
	}
	defer ticker.Stop()
	for i := range 3 {
		<-ticker.C
		fmt.Println("tick", i+1)
	}
	// Output:
	// tick 1
	// tick 2
	// tick 3
}
