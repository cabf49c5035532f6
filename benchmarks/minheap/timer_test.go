package minheap_test

import (
	"testing"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/timertest"
	"github.com/wheeltimer/wheeltimer/benchmarks/minheap"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

func TestConforms(t *testing.T) {
	timertest.Run(t, func(tb testing.TB, exec pool.Executor) hashedwheel.Timer {
		var opts []minheap.Option
		if exec != nil {
			opts = append(opts, minheap.WithExecutor(exec))
		}
		tm, err := minheap.New(opts...)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { tm.Stop() })
		return tm
	})
}

func TestOwnExecutorReleasedByStop(t *testing.T) {
	tm, err := minheap.New()
	if err != nil {
		t.Fatal(err)
	}
	timertest.OwnExecutorReleasedByStop(t, tm)
}

func TestInvalidOptions(t *testing.T) {
	for _, opt := range []minheap.Option{minheap.WithExecutor(nil), minheap.WithLogger(nil)} {
		if tm, err := minheap.New(opt); err == nil {
			tm.Stop()
			t.Errorf("New accepted an invalid option")
		}
	}
}
