package timertest

import (
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// The dispatch policy, as the suite sees it: n timeouts due at the same
// instant, whose tasks each block for up to hold, must all start within
// bound of the first, on the timer's default executor. A policy that runs
// them one after another starts the last (n-1)·hold after the first, and
// one that hands them over in batches of k starts a batch's last task
// (k-1)·hold after its first: both fail by far. So the case fails as soon as
// hashedwheel's dispatch and the engine's drift apart.
const (
	dueTogether      = 256
	dueTogetherHold  = 2 * time.Second
	dueTogetherBound = time.Second // far above what starting 256 goroutines takes
)

// testDueTogetherStartTogether checks the dispatch policy on tm, which must
// run tasks on its default executor. The tasks block until every one has
// started, or for hold, so that the case takes no longer than the bound
// when it fails, and a moment when it passes.
func testDueTogetherStartTogether(t *testing.T, tm hashedwheel.Timer) {
	started := make(chan struct{}, dueTogether)
	release := make(chan struct{})
	defer close(release) // before the timer's cleanup, whose Stop waits for the tasks
	task := hashedwheel.TaskFunc(func(hashedwheel.Timeout) {
		started <- struct{}{}
		select {
		case <-release:
		case <-time.After(dueTogetherHold):
		}
	})
	due := time.Now().Add(20 * time.Millisecond)
	for range dueTogether {
		if _, err := tm.NewTimeout(task, time.Until(due)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-started:
	case <-time.After(patience):
		t.Fatalf("no task ran within %v", patience)
	}
	bound := time.After(dueTogetherBound)
	for i := 1; i < dueTogether; i++ {
		select {
		case <-started:
		case <-bound:
			t.Fatalf("%d of %d tasks due together started within %v of the first, each blocking for up to %v: "+
				"the executor got them one after another or in batches, not each on its own",
				i, dueTogether, dueTogetherBound, dueTogetherHold)
		}
	}
}
