package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// fullTimer refuses every timeout after its first limit, and counts what
// the harness cancels and whether it closes the timer.
type fullTimer struct {
	limit, scheduled, cancelled int
	closed                      bool
}

var errFull = errors.New("full")

func (f *fullTimer) Schedule(time.Duration, func()) (contender.Handle, error) {
	if f.scheduled == f.limit {
		return nil, errFull
	}
	f.scheduled++
	return f.scheduled, nil
}
func (f *fullTimer) Cancel(contender.Handle) bool { f.cancelled++; return true }
func (f *fullTimer) Rearm(h contender.Handle, _ time.Duration) (contender.Handle, error) {
	return h, nil
}
func (f *fullTimer) Close() { f.closed = true }

func TestEachFilledTimerNotesWhatItCannotOpenOrFillAndReleasesIt(t *testing.T) {
	full := &fullTimer{limit: 5}
	cs := []contender.Contender{
		{Name: "refuses", New: func(contender.Config) (contender.Timer, error) { return nil, errFull }},
		{Name: "full", New: func(contender.Config) (contender.Timer, error) { return full, nil }},
	}
	var runs int
	notes := eachFilledTimer("test", []int{2, 5}, 2, cs, small, time.Hour, time.Second, nil, func(f filledTimer) {
		runs++
		if len(f.handles) != 2 || f.handles[1] != 4 || f.setup.Runs != 2 {
			t.Errorf("run with handles %v, setup over %d fills; want the 2 of the second fill, both fills timed", f.handles, f.setup.Runs)
		}
	})
	if runs != 1 {
		t.Errorf("%d runs, want 1: only N=2 fits the full timer", runs)
	}
	// Two notes for the timer that cannot be opened, one for N=5.
	if len(notes) != 3 || !strings.Contains(notes[0], "refuses: full") ||
		!strings.Contains(notes[2], "filling 5 pending timeouts: full") {
		t.Errorf("notes %q", notes)
	}
	// N=2 is filled twice, and cancels its 2 each time; N=5 cancels the 1
	// scheduled before the timer was full.
	if !full.closed || full.cancelled != 2+2+1 {
		t.Errorf("closed %v, cancelled %d, want true and 5", full.closed, full.cancelled)
	}
}
