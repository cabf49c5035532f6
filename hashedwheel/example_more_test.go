package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
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

// backoff is a Scheduler: each run twice as long after the last as the
// one before, four runs in all.
type backoff struct {
	gap  time.Duration
	left int
}

func (b *backoff) Next(after time.Time) time.Time {
	if b.left == 0 {
		return time.Time{} // the zero time ends the runs
	}
	b.left--
	b.gap *= 2
	return after.Add(b.gap)
}

// ScheduleFunc runs a function at the times a Scheduler gives; a cron
// schedule (github.com/robfig/cron/v3) is one. Here a fake clock stands in
// for the time, so the output is the same on every run.
func ExampleHashedWheelTimer_ScheduleFunc() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	retry, err := timer.ScheduleFunc(&backoff{gap: 500 * time.Millisecond, left: 4}, func() {
		fmt.Println("retry at", fake.Now().Truncate(time.Second).Format(time.TimeOnly))
	})
	if err != nil {
		panic(err)
	}
	fake.Advance(time.Minute) // returns once every run due by then has run
	fmt.Println("schedule ended:", retry.IsExpired())
	// Output:
	// retry at 09:00:01
	// retry at 09:00:03
	// retry at 09:00:07
	// retry at 09:00:15
	// schedule ended: true
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
