package hashedwheel

import (
	"math"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clockwork"
)

// now returns the clock, in nanoseconds after the start.
func (h *HashedWheelTimer) now() int64 { return h.clock.Nanotime() - h.startNanos }

// tickDue returns the tick of length tick covering deadline, ≥ 0: tick n
// covers (n·tick, (n+1)·tick], so a deadline on a tick's end is due at
// that end. Go's division truncates, so deadline 0 gives tick 0.
func tickDue(deadline, tick int64) int64 { return (deadline - 1) / tick }

// tickDue returns the tick that covers deadline d.
func (h *HashedWheelTimer) tickDue(d int64) int64 { return tickDue(d, h.tickNanos) }

// deadline returns the deadline of a timeout made at now with delay, in
// nanoseconds after the start: 1ns after now for a delay of zero or less,
// and clamped instead of overflowing. A deadline is after its call, so
// that it never falls in a tick that had ended by then: a timeout made on
// a tick's end with no delay runs at the next one, whether or not the
// worker has processed the tick just ended.
func deadline(now int64, delay time.Duration) int64 {
	if delay <= 0 {
		delay = 1
	}
	if int64(delay) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(delay)
}

// instant returns the clock reading at offset after start, saturating at
// clockwork.Forever instead of overflowing (a tick can be long enough that its
// end lies beyond the clock's range).
func instant(start, offset int64) int64 {
	if offset > clockwork.Forever-start {
		return clockwork.Forever
	}
	return start + offset
}
