package minheap_test

import (
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/timertest"
	"github.com/wheeltimer/wheeltimer/benchmarks/minheap"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

func TestConforms(t *testing.T) {
	timertest.Run(t, func(tb testing.TB, exec pool.Executor) hashedwheel.Timer {
		tm, err := minheap.New(minheap.WithExecutor(exec))
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
	done := make(chan struct{})
	if _, err := tm.AfterFunc(time.Millisecond, func() { close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
	if n := tm.PendingTimeouts(); n != 0 {
		t.Fatalf("PendingTimeouts = %d after the only timeout fired", n)
	}
	tm.Stop() // goleak in TestMain fails the package if the pool survives
}

func TestInvalidOptions(t *testing.T) {
	for _, opt := range []minheap.Option{minheap.WithExecutor(nil), minheap.WithLogger(nil)} {
		if tm, err := minheap.New(opt); err == nil {
			tm.Stop()
			t.Errorf("New accepted an invalid option")
		}
	}
}
