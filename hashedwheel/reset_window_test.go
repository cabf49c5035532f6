package hashedwheel

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestResetWindowOfARunInProgressIsCountedAndBounded measures, at
// GOMAXPROCS 2 and 16, the case Reset's doc states: an Every(1ms) reset
// every few milliseconds, as a heartbeat does, each run 300µs long. A run whose function
// reaches its first line after a Reset returned and before the deadline it
// set is a run the timer had started: every such run is one per Reset
// that Stats.ResetsDuringRun counted, and it begins within the bound of a
// goroutine's scheduling delay.
func TestResetWindowOfARunInProgressIsCountedAndBounded(t *testing.T) {
	resets := 1000
	if testing.Short() {
		resets = 200
	}
	const bound = 250 * time.Millisecond // a loaded machine under -race meets it
	for _, procs := range []int{2, 16} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			h := startTimer(t, WithTickDuration(time.Millisecond), WithLogger(discardLogger()))
			var mu sync.Mutex
			var starts []time.Time
			to, err := h.Every(time.Millisecond, func() {
				now := time.Now()
				mu.Lock()
				starts = append(starts, now)
				mu.Unlock()
				for time.Since(now) < 300*time.Microsecond { // a run long enough for Resets to find it in progress
				}
			})
			require.NoError(t, err)
			const delay = 2 * time.Millisecond
			type reset struct {
				called, returned time.Time
				counted          bool
			}
			log := make([]reset, 0, resets)
			for i := range resets {
				before := h.Stats().ResetsDuringRun
				called := time.Now()
				require.True(t, to.Reset(delay))
				returned := time.Now()
				log = append(log, reset{called, returned, h.Stats().ResetsDuringRun != before})
				time.Sleep(time.Duration(i%4) * time.Millisecond) // runs come due between some Resets, not others
			}
			require.True(t, to.Cancel())
			h.Stop()
			mu.Lock()
			defer mu.Unlock()
			inWindow, counted := 0, 0
			var widest time.Duration
			for i, r := range log {
				end := r.called.Add(delay) // the new deadline is no earlier
				if i+1 < len(log) && log[i+1].called.Before(end) {
					end = log[i+1].called
				}
				lo, _ := slices.BinarySearchFunc(starts, r.returned, func(a, b time.Time) int { return a.Compare(b) })
				n := 0
				for _, s := range starts[lo:] {
					if !s.Before(end) {
						break
					}
					n++
					widest = max(widest, s.Sub(r.returned))
				}
				if r.counted {
					counted++
				}
				inWindow += n
				require.LessOrEqual(t, n, 1, "Reset %d: runs begun after it returned, before its deadline", i)
				require.True(t, n == 0 || r.counted, "Reset %d: a run began after it returned, before its deadline, and it counted no run in progress", i)
			}
			require.Less(t, widest, bound, "the widest window")
			t.Logf("GOMAXPROCS %d: %d of %d Resets found a run in progress; %d runs began after their Reset returned, the latest %v after",
				procs, counted, resets, inWindow, widest)
		})
	}
}
