package hashedwheel

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSynctestFakeTime: a timer made inside a testing/synctest bubble runs
// on the bubble's fake time, so that a 30-minute timeout is tested in
// milliseconds; after Stop, no goroutine of the timer or of its pool is
// left, as the bubble requires.
func TestSynctestFakeTime(t *testing.T) {
	realStart := time.Now()
	synctest.Test(t, func(t *testing.T) {
		h, err := New(WithTickDuration(time.Second))
		require.NoError(t, err)
		start := time.Now()
		ctx, cancel := h.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		fired := make(chan time.Time, 1)
		_, err = h.AfterFunc(45*time.Minute, func() { fired <- time.Now() })
		require.NoError(t, err)
		every := 0
		_, err = h.Every(10*time.Minute, func() { every++ })
		require.NoError(t, err)

		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		waited := time.Since(start)
		assert.GreaterOrEqual(t, waited, 30*time.Minute, "never before the deadline")
		assert.LessOrEqual(t, waited, 30*time.Minute+2*time.Second, "at the first tick end after it")

		at := <-fired
		assert.GreaterOrEqual(t, at.Sub(start), 45*time.Minute)
		synctest.Wait()
		assert.Equal(t, 4, every, "runs at 10, 20, 30 and 40 minutes")
		assert.Len(t, h.Stop(), 1, "the periodic timeout")
	})
	assert.Less(t, time.Since(realStart), 10*time.Second, "fake time, not real")
}
