package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
)

// TestRealTimersAreTheRuntimes: a Real's Sleep, After, NewTimer, NewTicker
// and AfterFunc wait on the runtime's clock, for at least their duration;
// a stopped Timer sends nothing, as time.Timer since Go 1.23.
func TestRealTimersAreTheRuntimes(t *testing.T) {
	var c clock.Clock = clock.NewReal()
	const d = 5 * time.Millisecond
	begin := time.Now()
	c.Sleep(d)
	assert.GreaterOrEqual(t, c.Since(begin), d)
	assert.Less(t, c.Until(begin), time.Duration(0))

	at := <-c.After(d)
	assert.GreaterOrEqual(t, at.Sub(begin), 2*d)

	timer := c.NewTimer(d)
	<-timer.Chan()
	assert.False(t, timer.Stop(), "fired and received")
	assert.False(t, timer.Reset(time.Hour), "not active")
	assert.True(t, timer.Stop(), "armed")
	select {
	case <-timer.C:
		t.Fatal("a stopped timer sent")
	default:
	}

	ticker := c.NewTicker(d)
	first, second := <-ticker.C, <-ticker.Chan()
	assert.GreaterOrEqual(t, second.Sub(first), d/2, "a period apart, give or take the runtime's")
	ticker.Reset(time.Hour)
	ticker.Stop()
	assert.Panics(t, func() { c.NewTicker(0) }, "as time.NewTicker")

	ran := make(chan struct{})
	c.AfterFunc(d, func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		require.Fail(t, "AfterFunc never ran")
	}
	stop := c.AfterFunc(time.Hour, func() { t.Error("a stopped AfterFunc ran") })
	assert.True(t, stop())
}
