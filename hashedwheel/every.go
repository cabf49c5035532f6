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
// never starts before it, so the runs do not drift. Runs never overlap,
// and none is lost to a slow one, as with time.Ticker, whose channel holds
// one tick: a run that comes due while the previous one is still running
// starts as soon as that one returns, and a run that comes due while
// another waits to start is skipped and counted in Stats.PeriodicSkipped,
// as is every run that a worker late by more than a period missed. Cancel,
// or Stop, ends the runs: after a successful Cancel no run starts, and the
// one in progress, if any, completes. Reset moves the next run to now +
// delay, keeps the period, and revokes a run claimed but not started: no
// run starts before the new deadline, except one already in progress.
//
// The timeout counts as one pending timeout until it is cancelled; it is
// never IsExpired, and Stop returns it unless it was cancelled. A run
// costs no allocation. Every fails with ErrInvalidPeriod for a period of
// zero or less, or shorter than the timer's tick, which could not be kept;
// with ErrNilTask for a nil f; and as NewTimeout does otherwise. A failed
// call schedules nothing.
func (h *HashedWheelTimer) Every(period time.Duration, f func()) (Timeout, error) {
	if f == nil && period > 0 { // a period of zero or less is reported first
		return nil, ErrNilTask
	}
	if err := h.startForPeriod("Every", period); err != nil {
		return nil, err
	}
	t, err := h.schedule(&everyTask{f: f}, period, int64(period))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// startForPeriod refuses a period of zero or less with ErrInvalidPeriod,
// naming call, then starts the timer if needed and refuses a period
// shorter than its tick, which the wheel could not keep.
func (h *HashedWheelTimer) startForPeriod(call string, period time.Duration) error {
	if period <= 0 {
		return fmt.Errorf("%w: %s(%v): expected a period > 0", ErrInvalidPeriod, call, period)
	}
	if err := h.startIfNeeded(); err != nil {
		return err
	}
	if tick := time.Duration(h.tickNanos); period < tick {
		return fmt.Errorf("%w: %s(%v) on a timer with a tick of %v: expected a period of at least the tick",
			ErrInvalidPeriod, call, period, tick)
	}
	return nil
}
