package expvar_test

import (
	"expvar"
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	wheelexpvar "github.com/wheeltimer/wheeltimer/exporters/expvar"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// publishStats publishes the timer's Stats as the expvar variable
// "orders", served at /debug/vars.
func publishStats(timer *hashedwheel.HashedWheelTimer) error {
	if err := wheelexpvar.Publish("orders", timer); err != nil {
		return err
	}
	return nil
}

// A timer's Stats in expvar: every field, durations in seconds, and the
// parts of its lateness.
func ExamplePublish() {
	timer, err := hashedwheel.New(hashedwheel.WithClock(clock.NewFake(time.Now())))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	if err := publishStats(timer); err != nil {
		panic(err)
	}
	defer wheelexpvar.Unpublish("orders") // frees the name, which serves one timer
	for range 2 {
		if _, err := timer.AfterFunc(time.Second, func() {}); err != nil {
			panic(err)
		}
	}
	fmt.Println(expvar.Get("orders"))
	// Output:
	// {"pending":2,"scheduled":2,"expired":0,"cancelled":0,"returned_by_stop":0,"resets":0,"resets_during_run":0,"periodic_runs":0,"periodic_skipped":0,"schedule_errors":0,"rejected_full":0,"rejected_stopped":0,"executor_failures":0,"context_fallbacks":0,"chan_fallbacks":0,"task_panics":0,"hook_panics":0,"goexits":0,"ticks":0,"max_tick_lag_seconds":0,"lateness_p50_seconds":0,"lateness_p99_seconds":0,"max_lateness_seconds":0,"max_hand_off_wait_seconds":0,"hand_over_p50_seconds":0,"hand_over_p99_seconds":0,"max_hand_over_seconds":0,"hand_off_wait_p50_seconds":0,"hand_off_wait_p99_seconds":0}
}
