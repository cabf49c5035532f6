package hashedwheel

import (
	"fmt"
	"time"
)

// Every runs f every period, the first run one period after the call, and
// returns the Timeout that controls the runs. It starts the timer if
// needed.
//
// The rate is fixed: the k-th run is due at the call's time + k·period and
// never starts before it, so the runs do not drift. Runs never overlap: a
// run that comes due while the previous one is still running is skipped,
// as time.Ticker drops ticks, and so is every run that a worker late by
// more than a period missed. Cancel, or Stop, ends the runs: a run in
// progress completes, and at most that one run follows a successful
// Cancel. Reset moves the next run to now + delay and keeps the period.
//
// The timeout counts as one pending timeout until it is cancelled; it is
// never IsExpired, and Stop returns it unless it was cancelled. A run
// costs no allocation. Every fails with ErrInvalidPeriod for a period of
// zero or less, with ErrNilTask for a nil f, and as NewTimeout does
// otherwise; a failed call schedules nothing.
func (h *HashedWheelTimer) Every(period time.Duration, f func()) (Timeout, error) {
	if period <= 0 {
		return nil, fmt.Errorf("%w: Every(%v)", ErrInvalidPeriod, period)
	}
	if f == nil {
		return nil, ErrNilTask
	}
	t, err := h.schedule(funcTask(f), period, int64(period))
	if err != nil {
		return nil, err
	}
	return t, nil
}
