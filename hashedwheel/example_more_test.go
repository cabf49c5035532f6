package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// A connection's idle deadline moves later with every message: Reset
// re-arms the same timeout without allocating. When Reset returns false the
// timeout has fired or been cancelled, and the caller schedules anew.
func ExampleTimeout_reset() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	closed := make(chan time.Duration, 1)
	start := time.Now()
	idle, err := timer.AfterFunc(200*time.Millisecond, func() { closed <- time.Since(start) })
	if err != nil {
		panic(err)
	}
	for range 5 { // a message every 20ms keeps the connection open
		time.Sleep(20 * time.Millisecond)
		if !idle.Reset(200 * time.Millisecond) {
			panic("closed while busy")
		}
	}
	// Silent now: it closes 200ms after the last message, not before.
	fmt.Println("closed after the last message:", <-closed >= 300*time.Millisecond)
	// Output:
	// closed after the last message: true
}

// Every runs a function at a fixed rate until its timeout is cancelled.
func ExampleHashedWheelTimer_Every() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	flushes := make(chan int, 3)
	n := 0
	flush, err := timer.Every(20*time.Millisecond, func() {
		n++ // runs never overlap: no lock needed
		flushes <- n
	})
	if err != nil {
		panic(err)
	}
	for range 3 {
		fmt.Println("flush", <-flushes)
	}
	flush.Cancel() // a run in progress completes; no other starts
	// Output:
	// flush 1
	// flush 2
	// flush 3
}

// A server gives each request a deadline the wheel enforces: the context
// behaves as context.WithTimeout's, at a fraction of its cost, and what the
// handler passes it to sees the deadline.
func ExampleHashedWheelTimer_WithTimeout() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(5 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	slowBackend := func(ctx context.Context) error {
		select {
		case <-time.After(time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := timer.WithTimeout(r.Context(), 20*time.Millisecond)
		defer cancel() // releases the timeout at once
		if err := slowBackend(ctx); errors.Is(err, context.DeadlineExceeded) {
			http.Error(w, "backend too slow", http.StatusGatewayTimeout)
		}
	}
	_ = handler

	ctx, cancel := timer.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, hasDeadline := ctx.Deadline()
	fmt.Println(hasDeadline, slowBackend(ctx))
	// Output:
	// true context deadline exceeded
}

// Code that uses a timer is tested with fake time by making the timer
// inside a testing/synctest bubble: a 30-minute session timeout is tested
// in milliseconds. Stop it before the bubble ends; it returns once the
// timer's goroutines, and its pool's, are gone.
func ExampleHashedWheelTimer_fakeTime() {
	testSessionExpiry := func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			timer, err := hashedwheel.New(hashedwheel.WithTickDuration(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer timer.Stop()
			expired := make(chan struct{})
			if _, err := timer.AfterFunc(30*time.Minute, func() { close(expired) }); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			<-expired // the bubble's clock jumps to the deadline
			if time.Since(start) < 30*time.Minute {
				t.Fatal("expired early")
			}
		})
	}
	_ = testSessionExpiry // run by go test as a test function
}
