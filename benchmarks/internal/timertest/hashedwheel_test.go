package timertest_test

import (
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/timertest"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// The suite also runs on hashedwheel, the reference it was written from, so
// that a test that fails there is a fault of the suite or of the core, not
// of the benchmark timers.
func TestHashedWheelConforms(t *testing.T) {
	timertest.Run(t, func(tb testing.TB, exec pool.Executor) hashedwheel.Timer {
		opts := []hashedwheel.Option{
			hashedwheel.WithTickDuration(time.Millisecond),
			hashedwheel.WithTicksPerWheel(8),
		}
		if exec != nil {
			opts = append(opts, hashedwheel.WithExecutor(exec))
		}
		h, err := hashedwheel.New(opts...)
		if err != nil {
			tb.Fatal(err)
		}
		if err := h.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { h.Stop() })
		return h
	})
}
