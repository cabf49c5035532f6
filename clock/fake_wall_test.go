package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wheeltimer/wheeltimer/clock"
)

// TestFakeStepWallMovesOnlyTheWallClock: StepWall moves Now, back or
// forward, and leaves Nanotime, which Advance alone moves.
func TestFakeStepWallMovesOnlyTheWallClock(t *testing.T) {
	start := time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC)
	f := clock.NewFake(start)
	f.StepWall(-time.Hour)
	assert.Equal(t, start.Add(-time.Hour), f.Now())
	assert.Zero(t, f.Nanotime())
	f.Advance(time.Minute)
	assert.Equal(t, start.Add(-time.Hour+time.Minute), f.Now())
	assert.Equal(t, int64(time.Minute), f.Nanotime())
	f.StepWall(2 * time.Hour)
	assert.Equal(t, start.Add(time.Hour+time.Minute), f.Now())
	assert.Equal(t, int64(time.Minute), f.Nanotime())
}
