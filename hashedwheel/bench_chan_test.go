package hashedwheel

import (
	"testing"
	"time"
)

// The channel timers beside the time package's in the same run, in
// alternating batches, with the ratio of their times as the metric
// "x-NewTimer", "x-NewTicker" or "x-Reset" (lower is better).

// BenchmarkNewTimerStop makes a ChanTimer and stops it before it fires,
// the path of a select with a timeout that another case wins, beside
// time.NewTimer and Stop.
func BenchmarkNewTimerStop(b *testing.B) {
	h := startTimer(b)
	besideAs(b, "x-NewTimer", func(n int) {
		for range n {
			t, _ := h.NewTimer(benchDelay)
			t.Stop()
		}
	}, func(n int) {
		for range n {
			time.NewTimer(benchDelay).Stop()
		}
	})
}

// BenchmarkNewTickerStop makes a Ticker and stops it, beside
// time.NewTicker and Stop.
func BenchmarkNewTickerStop(b *testing.B) {
	h := startTimer(b)
	besideAs(b, "x-NewTicker", func(n int) {
		for range n {
			t, _ := h.NewTicker(benchDelay)
			t.Stop()
		}
	}, func(n int) {
		for range n {
			time.NewTicker(benchDelay).Stop()
		}
	})
}

// BenchmarkChanTimerReset pushes a pending ChanTimer's deadline later, as
// an idle connection's timer is, beside time.Timer.Reset.
func BenchmarkChanTimerReset(b *testing.B) {
	h := startTimer(b)
	wheel, err := h.NewTimer(benchDelay)
	if err != nil {
		b.Fatal(err)
	}
	defer wheel.Stop()
	std := time.NewTimer(benchDelay)
	defer std.Stop()
	besideAs(b, "x-Reset", func(n int) {
		for range n {
			_, _ = wheel.Reset(benchDelay)
		}
	}, func(n int) {
		for range n {
			std.Reset(benchDelay)
		}
	})
}
