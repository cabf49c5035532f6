package scenario

import (
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/contender"
)

// noop is the task of timeouts that are not meant to fire during a
// measurement; one shared func, so that scheduling it allocates nothing.
var noop = func() {}

// fill schedules len(handles) timeouts that do not fire during the
// measurement, their delays spread evenly over [base, base+spread), and
// stores their handles. The caller allocates handles, so that a heap
// measurement can leave the slice out.
func fill(t contender.Timer, handles []contender.Handle, base, spread time.Duration) error {
	n := time.Duration(max(len(handles), 1))
	for i := range handles {
		h, err := t.Schedule(base+spread*time.Duration(i)/n, noop)
		if err != nil {
			return fmt.Errorf("filling %d pending timeouts: %w", len(handles), err)
		}
		handles[i] = h
	}
	return nil
}

// release closes t; for a contender whose Close keeps pending timeouts
// (time.AfterFunc), it first cancels the handles the harness kept, so that
// they neither fire nor hold memory during later measurements.
func release(c contender.Contender, t contender.Timer, handles []contender.Handle) {
	if !c.ReleasesOnClose {
		for _, h := range handles {
			if h != nil {
				t.Cancel(h)
			}
		}
	}
	t.Close()
}
