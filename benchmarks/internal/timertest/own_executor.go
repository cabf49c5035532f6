package timertest

import (
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// PendingCounter is a Timer that reports its pending timeouts, as
// HashedWheelTimer does.
type PendingCounter interface {
	hashedwheel.Timer
	PendingTimeouts() int64
}

// OwnExecutorReleasedByStop checks a timer made without an executor: a
// timeout fires on the executor the timer made for itself, after which
// nothing is pending, and Stop releases that executor. A pool that
// survives Stop is caught by the calling package's goroutine-leak check.
func OwnExecutorReleasedByStop(t *testing.T, tm PendingCounter) {
	done := make(chan struct{})
	if _, err := tm.NewTimeout(hashedwheel.TaskFunc(func(hashedwheel.Timeout) { close(done) }), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	<-done
	if n := tm.PendingTimeouts(); n != 0 {
		t.Fatalf("PendingTimeouts = %d after the only timeout fired", n)
	}
	tm.Stop()
}
