package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// realEmbedder is a custom clock that embeds a Real, as a test's clock
// that steps the wall clock does.
type realEmbedder struct{ *clock.Real }

// TestZeroRealKeepsTime: a timer on the zero Real, or on a custom clock
// embedding new(clock.Real), fires its timeouts and ends its contexts, as
// one on NewReal does; the zero Real's Nanotime counts from the program's
// start.
func TestZeroRealKeepsTime(t *testing.T) {
	n := (&clock.Real{}).Nanotime()
	assert.Positive(t, n)
	assert.Less(t, n, int64(time.Hour), "from the program's start")
	for name, c := range map[string]clock.Clock{
		"zero Real":          &clock.Real{},
		"embedded new(Real)": realEmbedder{new(clock.Real)},
	} {
		t.Run(name, func(t *testing.T) {
			h, err := hashedwheel.New(hashedwheel.WithClock(c))
			require.NoError(t, err)
			defer h.Stop()
			fired := make(chan struct{})
			_, err = h.AfterFunc(10*time.Millisecond, func() { close(fired) })
			require.NoError(t, err)
			ctx, cancel := h.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			bound := time.After(10 * time.Second)
			select {
			case <-fired:
			case <-bound:
				t.Fatal("the timeout never fired")
			}
			select {
			case <-ctx.Done():
				assert.Equal(t, context.DeadlineExceeded, ctx.Err())
			case <-bound:
				t.Fatal("the context never ended")
			}
		})
	}
}

// fakeEmbedder is a custom clock that embeds a Fake.
type fakeEmbedder struct{ *clock.Fake }

// TestNewRefusesAClockThatCannotKeepTime: New refuses the zero Fake, and
// a custom clock embedding a nil Fake or Real, with an error wrapping
// ErrInvalidOption that names the constructor, instead of a timer that
// panics or never fires.
func TestNewRefusesAClockThatCannotKeepTime(t *testing.T) {
	for name, c := range map[string]clock.Clock{
		"zero Fake":         &clock.Fake{},
		"embedded nil Fake": fakeEmbedder{},
		"embedded nil Real": realEmbedder{},
	} {
		h, err := hashedwheel.New(hashedwheel.WithClock(c))
		require.Error(t, err, name)
		assert.Nil(t, h, name)
		assert.True(t, errors.Is(err, hashedwheel.ErrInvalidOption), "%s: %v", name, err)
		assert.Contains(t, err.Error(), "WithClock", name)
	}
	_, err := hashedwheel.New(hashedwheel.WithClock(&clock.Fake{}))
	assert.Contains(t, err.Error(), "clock.NewFake")
	_, err = hashedwheel.New(hashedwheel.WithClock(realEmbedder{}))
	assert.Contains(t, err.Error(), "clock.NewReal")
	h, err := hashedwheel.New(hashedwheel.WithClock(fakeEmbedder{clock.NewFake(start)}))
	require.NoError(t, err, "a Fake made by NewFake")
	h.Stop()
}
