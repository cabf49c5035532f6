package hierarchical_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/hierarchical"
	"github.com/wheeltimer/wheeltimer/benchmarks/internal/timertest"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// The conformance suite with tiny wheels, so that millisecond delays
// already cascade through several levels, and with a Kafka-like size.
func TestConforms(t *testing.T) {
	for _, size := range []int{2, 8, 64} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			timertest.Run(t, func(tb testing.TB, exec pool.Executor) hashedwheel.Timer {
				opts := []hierarchical.Option{
					hierarchical.WithTickDuration(time.Millisecond),
					hierarchical.WithWheelSize(size),
				}
				if exec != nil {
					opts = append(opts, hierarchical.WithExecutor(exec))
				}
				tm, err := hierarchical.New(opts...)
				if err != nil {
					tb.Fatal(err)
				}
				tb.Cleanup(func() { tm.Stop() })
				return tm
			})
		})
	}
}

func TestOwnExecutorReleasedByStop(t *testing.T) {
	tm, err := hierarchical.New()
	if err != nil {
		t.Fatal(err)
	}
	timertest.OwnExecutorReleasedByStop(t, tm)
}

func TestLevelsGrowWithDelay(t *testing.T) {
	tm, err := hierarchical.New(hierarchical.WithTickDuration(time.Millisecond), hierarchical.WithWheelSize(4), hierarchical.WithExecutor(pool.Inline))
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Stop()
	if _, err := tm.AfterFunc(time.Hour, func() {}); err != nil {
		t.Fatal(err)
	}
	// One hour is 3.6e6 ticks: log4(3.6e6) ≈ 10.9, so 11 levels.
	if n := tm.Levels(); n != 11 {
		t.Fatalf("Levels = %d for a one-hour delay at 1ms × 4, want 11", n)
	}
	if n := tm.PendingTimeouts(); n != 1 {
		t.Fatalf("PendingTimeouts = %d, want 1", n)
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, opt := range []hierarchical.Option{
		hierarchical.WithTickDuration(0),
		hierarchical.WithWheelSize(1),
		hierarchical.WithExecutor(nil),
		hierarchical.WithLogger(nil),
	} {
		if tm, err := hierarchical.New(opt); err == nil {
			tm.Stop()
			t.Errorf("New accepted an invalid option")
		}
	}
}
