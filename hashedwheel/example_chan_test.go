package hashedwheel_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// closeWhenIdle prints each message until none comes for 50ms. Reset
// fails with ErrStopped once the timer is stopped, as in a shutdown: the
// loop returns the error rather than panicking.
func closeWhenIdle(timer hashedwheel.Interface, messages <-chan string) error {
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
				return err // ErrStopped: the program is shutting down
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

// Once the timer is stopped, Reset returns ErrStopped: closeWhenIdle
// returns it, as a server's loop does during its shutdown.
func ExampleChanTimer_Reset_stopped() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	messages := make(chan string, 1)
	messages <- "last"
	stopped := &stopOnFirstReset{Interface: timer}
	err = closeWhenIdle(stopped, messages)
	fmt.Println(errors.Is(err, hashedwheel.ErrStopped))
	// Output:
	// last
	// true
}

// stopOnFirstReset is a timer stopped just after it makes its first
// ChanTimer, as a shutdown may stop it under a loop.
type stopOnFirstReset struct{ hashedwheel.Interface }

func (s *stopOnFirstReset) NewTimer(d time.Duration) (*hashedwheel.ChanTimer, error) {
	t, err := s.Interface.NewTimer(d)
	s.Interface.Stop()
	return t, err
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
