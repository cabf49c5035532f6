package hashedwheel_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// A timer is made once and shared; the first NewTimeout starts it, and Stop
// ends it.
func ExampleNew() {
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithTicksPerWheel(256),
	)
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	done := make(chan string)
	if _, err := timer.AfterFunc(20*time.Millisecond, func() { done <- "fired" }); err != nil {
		panic(err)
	}
	fmt.Println(<-done)
	// Output: fired
}

// New rejects an option it cannot use, naming the option and the value.
func ExampleNew_invalidOption() {
	_, err := hashedwheel.New(hashedwheel.WithTicksPerWheel(0))
	fmt.Println(errors.Is(err, hashedwheel.ErrInvalidOption))
	fmt.Println(err)
	// Output:
	// true
	// hashedwheel: invalid option: WithTicksPerWheel(0): expected 1 to MaxTicksPerWheel, 2097152
}

// NewTimeout schedules a TimerTask; the task receives its own Timeout, and
// never runs before the timeout's deadline.
func ExampleHashedWheelTimer_NewTimeout() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	start := time.Now()
	done := make(chan bool)
	task := hashedwheel.TaskFunc(func(t hashedwheel.Timeout) {
		done <- t.IsExpired() && time.Since(start) >= 50*time.Millisecond
	})
	if _, err := timer.NewTimeout(task, 50*time.Millisecond); err != nil {
		panic(err)
	}
	fmt.Println("ran expired, not before 50ms:", <-done)
	// Output: ran expired, not before 50ms: true
}

// NewTimeouts schedules many tasks with one delay in one call: here, the
// acknowledgements awaited from the subscribers a message went to. A
// subscriber that acknowledges cancels its timeout.
func ExampleHashedWheelTimer_NewTimeouts() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	subscribers := []string{"ann", "bob", "cid"}
	unacknowledged := make(chan string, len(subscribers))
	tasks := make([]hashedwheel.TimerTask, len(subscribers))
	for i, name := range subscribers {
		tasks[i] = hashedwheel.TaskFunc(func(hashedwheel.Timeout) { unacknowledged <- name })
	}
	timeouts, err := timer.NewTimeouts(50*time.Millisecond, tasks...)
	if err != nil {
		panic(err)
	}
	timeouts[1].Cancel() // bob acknowledges

	late := []string{<-unacknowledged, <-unacknowledged}
	slices.Sort(late)
	fmt.Println("no acknowledgement from", late)
	// Output: no acknowledgement from [ann cid]
}

// AfterFunc is NewTimeout for a plain function, in the style of
// time.AfterFunc. Timeouts fire in the order of their deadlines, not of
// their scheduling.
func ExampleHashedWheelTimer_AfterFunc() {
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithExecutor(pool.Inline), // one goroutine runs the tasks, in order
	)
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	done := make(chan string)
	for _, delay := range []time.Duration{60 * time.Millisecond, 10 * time.Millisecond} {
		if _, err := timer.AfterFunc(delay, func() {
			done <- fmt.Sprint("fired after ", delay)
		}); err != nil {
			panic(err)
		}
	}
	fmt.Println(<-done)
	fmt.Println(<-done)
	// Output:
	// fired after 10ms
	// fired after 60ms
}

// Cancel is the common case for a timer of request deadlines: the response
// arrives first and cancels the timeout. It succeeds once, and never after
// the task was claimed for running.
func ExampleTimeout_cancel() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	deadline, err := timer.AfterFunc(time.Second, func() { fmt.Println("request timed out") })
	if err != nil {
		panic(err)
	}
	// ... the response arrives in time:
	fmt.Println("cancelled:", deadline.Cancel())
	fmt.Println("cancelled again:", deadline.Cancel())
	fmt.Println("IsCancelled:", deadline.IsCancelled())

	// A timeout that has fired can no longer be cancelled.
	fired := make(chan hashedwheel.Timeout)
	if _, err := timer.NewTimeout(hashedwheel.TaskFunc(func(t hashedwheel.Timeout) { fired <- t }), 0); err != nil {
		panic(err)
	}
	t := <-fired
	fmt.Println("cancel after firing:", t.Cancel(), "IsExpired:", t.IsExpired())
	// Output:
	// cancelled: true
	// cancelled again: false
	// IsCancelled: true
	// cancel after firing: false IsExpired: true
}

// Stop returns the timeouts that had neither fired nor been cancelled; their
// tasks will never run. The timer accepts no timeouts afterwards.
func ExampleHashedWheelTimer_Stop() {
	timer, err := hashedwheel.New()
	if err != nil {
		panic(err)
	}
	var cancelled hashedwheel.Timeout
	for i := range 3 {
		t, err := timer.AfterFunc(time.Hour, func() { fmt.Println("never runs") })
		if err != nil {
			panic(err)
		}
		if i == 0 {
			cancelled = t
		}
	}
	cancelled.Cancel()

	unfinished := timer.Stop()
	fmt.Println("returned by Stop:", len(unfinished))
	for _, t := range unfinished {
		fmt.Println("cancelled:", t.IsCancelled())
	}
	_, err = timer.AfterFunc(time.Second, func() {})
	fmt.Println(err)
	// Output:
	// returned by Stop: 2
	// cancelled: true
	// cancelled: true
	// hashedwheel: timer stopped
}

// Stats is a cheap snapshot of the timer's counters, for metrics and
// dashboards.
func ExampleHashedWheelTimer_Stats() {
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithExecutor(pool.Inline),
	)
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	fired := make(chan struct{}, 2)
	for range 2 {
		if _, err := timer.AfterFunc(20*time.Millisecond, func() { fired <- struct{}{} }); err != nil {
			panic(err)
		}
	}
	t, err := timer.AfterFunc(10*time.Millisecond, func() {})
	if err != nil {
		panic(err)
	}
	t.Cancel()
	<-fired
	<-fired

	s := timer.Stats()
	fmt.Printf("scheduled %d, pending %d, expired %d, cancelled %d\n",
		s.Scheduled, s.Pending, s.Expired, s.Cancelled)
	fmt.Println("ticks counted:", s.Ticks > 0)
	// Output:
	// scheduled 3, pending 0, expired 2, cancelled 1
	// ticks counted: true
}

// The tick duration is the timer's resolution: a timeout fires on the first
// tick that ends after its deadline, so at most about one tick late.
func ExampleWithTickDuration() {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(5 * time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	done := make(chan hashedwheel.Timeout)
	start := time.Now()
	if _, err := timer.NewTimeout(hashedwheel.TaskFunc(func(t hashedwheel.Timeout) { done <- t }), 12*time.Millisecond); err != nil {
		panic(err)
	}
	t := <-done
	fmt.Println("not before the deadline:", !time.Now().Before(t.Deadline()) && time.Since(start) >= 12*time.Millisecond)
	// Output: not before the deadline: true
}

// A wheel of ticksPerWheel buckets covers ticksPerWheel·tickDuration in one
// turn; longer delays work too, and wait for the turns they need.
func ExampleWithTicksPerWheel() {
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(time.Millisecond),
		hashedwheel.WithTicksPerWheel(10), // rounded up to 16 buckets: 16ms per turn
	)
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	done := make(chan time.Duration)
	start := time.Now()
	if _, err := timer.AfterFunc(40*time.Millisecond, func() { done <- time.Since(start) }); err != nil {
		panic(err)
	}
	fmt.Println("fired after 2 full turns, not early:", <-done >= 40*time.Millisecond)
	// Output: fired after 2 full turns, not early: true
}

// WithMaxPendingTimeouts bounds the memory a timer can hold: at the limit,
// NewTimeout fails instead of growing.
func ExampleWithMaxPendingTimeouts() {
	timer, err := hashedwheel.New(hashedwheel.WithMaxPendingTimeouts(2))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	for i := range 3 {
		if _, err := timer.AfterFunc(time.Hour, func() {}); err != nil {
			fmt.Println(i, "rejected:", errors.Is(err, hashedwheel.ErrTooManyPendingTimeouts))
			continue
		}
		fmt.Println(i, "scheduled")
	}
	fmt.Println("rejected:", timer.Stats().RejectedFull)
	// Output:
	// 0 scheduled
	// 1 scheduled
	// 2 rejected: true
	// rejected: 1
}

// With pool.Inline, expired tasks run one after another on the timer's own
// goroutine, as in Netty: cheap, but a slow task delays every other timeout.
func ExampleWithExecutor() {
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithExecutor(pool.Inline),
	)
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	done := make(chan struct{})
	var order []string
	for i, name := range []string{"first", "second", "third"} {
		delay := time.Duration(10+20*i) * time.Millisecond
		if _, err := timer.AfterFunc(delay, func() {
			order = append(order, name) // no lock needed: one goroutine runs them all
			if len(order) == 3 {
				close(done)
			}
		}); err != nil {
			panic(err)
		}
	}
	<-done
	fmt.Println(order)
	// Output: [first second third]
}

// WithLogger sends the timer's errors, such as a panicking task, with its
// stack, to a log/slog logger.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "stack", "timeout":
				return slog.Attr{} // keep the output reproducible
			}
			return a
		},
	}))
	timer, err := hashedwheel.New(hashedwheel.WithLogger(logger), hashedwheel.WithExecutor(pool.Inline))
	if err != nil {
		panic(err)
	}
	ran := make(chan struct{})
	if _, err := timer.AfterFunc(0, func() {
		defer close(ran)
		panic("boom")
	}); err != nil {
		panic(err)
	}
	<-ran
	timer.Stop() // returns once the worker, which ran the task, has logged the panic
	// Output:
	// level=ERROR msg="hashedwheel: TimerTask panicked" task=github.com/wheeltimer/wheeltimer/hashedwheel_test.ExampleWithLogger.func2 panic=boom
}
