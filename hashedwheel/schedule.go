package hashedwheel

import (
	"fmt"
)

// ScheduleFunc runs f at each time s gives, the first at s.Next(now), and
// returns the Timeout that controls the runs. It starts the timer if
// needed.
//
// Each run is due at the time Next gave, at the timer's resolution, and
// never starts before it; the next run is due at Next of that time.
// Those times are wall-clock times, read on the timer's clock as each run
// is claimed, where Every and NewTimeout follow the monotonic clock, as
// package time does: after a step of the wall clock (an NTP step, a
// resumed virtual machine) a run never starts before the wall time Next
// named, nor runs twice for one named time. After a step back, a run
// waits for its wall time; after a step forward, a run whose wall time
// passed runs once, when the worker next wakes for it, and the later ones
// already passed are skipped, as robfig/cron's own loop does, and counted
// up to 1000 (Stats.PeriodicSkipped).
// The runs keep Every's guarantees: they never overlap, a run due while the
// previous one runs starts as soon as it returns, a run due while another
// waits to start, or missed by a late worker, is skipped and counted in
// Stats.PeriodicSkipped, and Cancel, Reset and Stop act as on Every's
// timeout. When Next returns the zero time the runs end after the run
// claimed then, and the timeout becomes IsExpired; when it returns a time
// not after its argument, or panics, they end too, and the fault is
// logged and counted in Stats.ScheduleErrors: a schedule never makes the
// worker loop. Next runs on the worker once the tick's other due timeouts
// are claimed: a Next that calls runtime.Goexit (as t.FailNow does) ends
// the runs like a panic, and one that calls Stop stops the timer; neither
// loses a timeout due with the run.
//
// ScheduleFunc fails with ErrInvalidSchedule for a nil s or one whose
// first Next is zero or not after now, with ErrNilTask for a nil f, and as
// NewTimeout does otherwise; a failed call schedules nothing.
func (h *HashedWheelTimer) ScheduleFunc(s Scheduler, f func()) (Timeout, error) {
	if isNil(s) {
		return nil, fmt.Errorf("%w: ScheduleFunc(nil)", ErrInvalidSchedule)
	}
	if f == nil {
		return nil, ErrNilTask
	}
	if err := h.startIfNeeded(); err != nil {
		return nil, err
	}
	now := h.clock.Now().Round(0) // a wall time, as Next's are
	first, err := callScheduler(s, now)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: Next(%v): %v", ErrInvalidSchedule, now, err)
	case !first.After(now):
		return nil, fmt.Errorf("%w: Next(%v) returned %v: expected a time after it", ErrInvalidSchedule, now, first)
	}
	t, err := h.schedule(&scheduledTask{s: s, f: f, named: first}, first.Sub(now), scheduledPeriod)
	if err != nil {
		return nil, err
	}
	return t, nil
}
