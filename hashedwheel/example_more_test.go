package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
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

// A request that must be answered by a wall-clock time gets a context with
// that deadline; the wheel enforces it at its resolution, never before it.
// Here the timer runs on a fake clock, so the output is the same on every
// run; on the runtime's clock the context behaves the same in real time.
func ExampleHashedWheelTimer_WithDeadline() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	closing := time.Date(2026, 1, 1, 9, 30, 0, 0, time.UTC) // the shop closes at 09:30
	ctx, cancel := timer.WithDeadline(context.Background(), closing)
	defer cancel() // releases the timeout at once
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()

	deadline, _ := ctx.Deadline()
	fmt.Println("deadline:", deadline.Format(time.TimeOnly))
	fake.Advance(29 * time.Minute)
	fmt.Println("09:29:", ctx.Err())
	fake.Advance(2 * time.Minute)
	fmt.Println("09:31:", ctx.Err())
	fmt.Println("derived:", child.Err())
	// Output:
	// deadline: 09:30:00
	// 09:29: <nil>
	// 09:31: context deadline exceeded
	// derived: context deadline exceeded
}

// StopContext bounds how long a shutdown waits for the tasks that are
// running: once ctx is done it returns ctx.Err(), and the tasks still
// complete. The timeouts Stop cancels are handed out once, by the first
// Stop or StopContext that returns after the timer's worker has stopped.
func ExampleHashedWheelTimer_StopContext() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	started, release, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	if _, err := timer.AfterFunc(0, func() {
		close(started)
		<-release // a task slower than the shutdown allows
		close(finished)
	}); err != nil {
		panic(err)
	}
	if _, err := timer.AfterFunc(time.Hour, func() { fmt.Println("never runs") }); err != nil {
		panic(err)
	}
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	unfinished, err := timer.StopContext(ctx)
	fmt.Println("StopContext:", err)

	close(release)
	unfinished = append(unfinished, timer.Stop()...) // waits for the task
	select {
	case <-finished:
		fmt.Println("the slow task finished")
	default:
		fmt.Println("Stop returned before the task")
	}
	fmt.Println("never run:", len(unfinished))
	// Output:
	// StopContext: context deadline exceeded
	// the slow task finished
	// never run: 1
}

// WithClock gives a timer the time source of a test: on a clock.Fake,
// time moves only when the test moves it, and Advance returns once every
// task due by then has run. A Fake may be made anywhere, at package level
// or in TestMain too, and shared by several timers.
func ExampleWithClock() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	report, err := timer.AfterFunc(30*time.Minute, func() {
		fmt.Println("report sent at", fake.Now().Format(time.TimeOnly))
	})
	if err != nil {
		panic(err)
	}
	flushes := 0
	if _, err := timer.Every(10*time.Minute, func() { flushes++ }); err != nil {
		panic(err)
	}
	fmt.Println("report due:", report.Deadline().Format(time.TimeOnly))

	fake.Advance(29 * time.Minute) // 09:29: not yet
	fmt.Println("09:29: flushes", flushes, "report sent", report.IsExpired())
	fake.Advance(36 * time.Minute) // 10:05: the report at 09:30, flushes at 09:10 to 10:00
	fmt.Println("10:05: flushes", flushes, "report sent", report.IsExpired())
	// Output:
	// report due: 09:30:00
	// 09:29: flushes 2 report sent false
	// report sent at 09:30:00
	// 10:05: flushes 6 report sent true
}

// afterFuncer is what idleSessions needs of a timer: code that takes a
// timer as a dependency declares the methods it calls, and is handed a
// timer on a clock.Fake in its tests.
type afterFuncer interface {
	AfterFunc(delay time.Duration, f func()) (hashedwheel.Timeout, error)
}

// idleSessions signs a user out after a period without activity: the code
// under test of the fakeTime example, which takes its timer as a
// dependency.
type idleSessions struct {
	timer afterFuncer
	idle  time.Duration
	mu    sync.Mutex
	live  map[string]hashedwheel.Timeout
}

// Touch records activity of user, signing the user in if needed.
func (s *idleSessions) Touch(user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.live[user]; ok && t.Reset(s.idle) {
		return nil
	}
	var t hashedwheel.Timeout
	t, err := s.timer.AfterFunc(s.idle, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.live[user] == t {
			delete(s.live, user)
		}
	})
	if err != nil {
		return err
	}
	s.live[user] = t
	return nil
}

// SignedIn reports whether user is signed in.
func (s *idleSessions) SignedIn(user string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live[user]
	return ok
}

// Code that uses a timer is tested with fake time: the test hands it a
// timer on a clock.Fake, so that a 30-minute idle timeout is tested in
// microseconds, with the same result on every run. (A timer made inside a
// testing/synctest bubble runs on the bubble's fake time instead; the
// package's TestSynctestFakeTime shows it.)
func ExampleHashedWheelTimer_fakeTime() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	sessions := &idleSessions{timer: timer, idle: 30 * time.Minute, live: map[string]hashedwheel.Timeout{}}

	if err := sessions.Touch("alice"); err != nil {
		panic(err)
	}
	fake.Advance(20 * time.Minute)
	if err := sessions.Touch("alice"); err != nil { // activity: 30 more minutes
		panic(err)
	}
	fake.Advance(29 * time.Minute)
	fmt.Println("after 49 minutes, 29 idle:", sessions.SignedIn("alice"))
	fake.Advance(2 * time.Minute)
	fmt.Println("after 51 minutes, 31 idle:", sessions.SignedIn("alice"))
	// Output:
	// after 49 minutes, 29 idle: true
	// after 51 minutes, 31 idle: false
}
