package dispatch_test

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// TestSlowTasksInASynctestBubbleLetTimeAdvance: in a testing/synctest
// bubble, time moves only once every goroutine of the bubble blocks. Slow
// tasks dispatched together, more than the drain functions a Dispatch
// hands over, sleep there on the bubble's time: the check for slow tasks
// must block too, not spin waiting for time to pass, or the bubble's time
// would never advance and the sleeps never end.
func TestSlowTasksInASynctestBubbleLetTimeAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 4*runtime.GOMAXPROCS(0) + 1
		exec := &goExecutor{}
		d := dispatch.New(dispatch.Config[int]{Executor: exec, Parallelism: n, Run: func(int) {
			time.Sleep(time.Minute)
		}})
		start := time.Now()
		d.Dispatch(sequence(n))
		d.Close()
		<-d.Idle()
		assert.Zero(t, d.InFlight(), "in flight once idle")
		assert.GreaterOrEqual(t, time.Since(start), time.Minute, "on the bubble's time")
	})
}
