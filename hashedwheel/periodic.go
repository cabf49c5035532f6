package hashedwheel

import (
	"math"
	"time"
)

// The runs of a periodic timeout (Every, ScheduleFunc) are marked in its
// state word, so that the worker's claim, Reset, Cancel and the run itself
// each decide with one compare-and-swap:
//
//	idle ──worker claims a run──▶ claimed ──the run starts──▶ running ──it returns──▶ idle
//	                                 │                          │    ▲
//	                  Reset revokes it: idle     a run due meanwhile: running and owed
//	                                                            (it starts as the other returns)
//
// claimedBit alone: a run is claimed and waits to start; runningBit alone:
// a run is running; both: a run is running and the next one is owed. A run
// due while one waits to start or is owed is skipped, as time.Ticker drops
// ticks beyond the one its channel holds. A run starts only while the
// timeout is not cancelled: a Cancel leaves at most the run in progress.

// claimRun returns the state word of a periodic timeout, read as w and due,
// after the worker's claim of its run, with next as its next deadline, and
// whether to dispatch the run or count it skipped.
func claimRun(w uint64, next int64) (word uint64, dispatch, skipped bool) {
	word = withDeadline(w, next)
	switch {
	case w&claimedBit != 0: // a run waits to start, or is owed
		return word, false, true
	case w&runningBit != 0: // owed: it starts as the running one returns
		return word | claimedBit, false, false
	default:
		return word | claimedBit, true, false
	}
}

// claimPeriodic returns the state word of a periodic timeout, read as w
// and due, once the worker claims its run, from being the start of the
// first tick not ended at now; whether to dispatch the run; how many runs it
// skipped; and whether the runs end, the timeout then expired.
func (t *timeout) claimPeriodic(w uint64, from int64) (word uint64, dispatch bool, skipped int, ended bool) {
	d := deadlineOf(w)
	next := d
	if t.period > 0 {
		next, skipped = nextFixedRun(d, from, t.period)
	} else {
		var ok bool
		if next, skipped, ok = t.nextScheduledRun(d, from); !ok {
			next, ended = d, true
		}
	}
	word, dispatch, skip := claimRun(w, next)
	if skip {
		skipped++
	}
	if ended {
		word = withState(word, stateExpired)
	}
	return word, dispatch, skipped, ended
}

// nextFixedRun returns the deadline of the run of a timeout of the given
// period that follows its run due at d, from being the start of the first
// tick not ended at now: the first of d + k·period, k ≥ 1, after from, in
// a tick yet to end, so that runs keep to their rate, one a tick at most,
// and a late worker skips the runs of the ticks it missed; and how many it
// skipped.
func nextFixedRun(d, from, period int64) (next int64, skipped int) {
	k := max((from-d)/period+1, 1)
	if k > (math.MaxInt64-d)/period {
		return math.MaxInt64, 0
	}
	return d + k*period, int(min(k-1, math.MaxInt32))
}

// runFor returns the deadline of the run that the worker claimed last,
// which its next deadline, in word, follows.
func (t *timeout) runFor(word uint64) int64 {
	if s, ok := t.task.(*scheduledTask); ok {
		return s.runFor
	}
	return deadlineOf(word) - t.period
}

// scheduledTask is the task of a timeout of ScheduleFunc: f, run at the
// times s gives.
type scheduledTask struct {
	s Scheduler
	f func()
	// The worker's: the deadline of the run claimed last, and whether a
	// call of s.Next is in progress, which, found set, is one that never
	// returned (it called runtime.Goexit).
	runFor  int64
	calling bool
}

func (s *scheduledTask) Run(Timeout) { s.f() }

// maxCatchUp bounds the runs of a schedule that a late worker skips one
// Next call at a time; past it, one call finds the first run to come.
const maxCatchUp = 1000

// nextScheduledRun returns the deadline of the run that follows the
// schedule's run due at d, as nextFixedRun does for a period; ok is false
// if the runs end there, as they do when Next returns the zero time, or,
// counted and logged, a time not after its argument, or panics.
func (t *timeout) nextScheduledRun(d, from int64) (next int64, skipped int, ok bool) {
	s := t.task.(*scheduledTask)
	s.runFor = d
	next, ok = t.callNext(s, d)
	for ok && next <= from { // due in a tick that has ended
		skipped++
		if skipped == maxCatchUp {
			next, ok = t.callNext(s, from)
			break
		}
		next, ok = t.callNext(s, next)
	}
	return next, skipped, ok
}

// callNext returns the instant s.Next gives after instant, in nanoseconds
// after the timer's start, and false if the runs end.
func (t *timeout) callNext(s *scheduledTask, instant int64) (next int64, ok bool) {
	h := t.timer
	if s.calling { // an earlier call never returned
		h.scheduleFailed(t, "Next called runtime.Goexit")
		return 0, false
	}
	start := h.startTime
	at := start.Add(time.Duration(instant))
	s.calling = true
	nextTime, err := callScheduler(s.s, at)
	s.calling = false
	switch {
	case err != nil:
		h.scheduleFailed(t, err.Error())
		return 0, false
	case nextTime.IsZero():
		return 0, false
	case !nextTime.After(at):
		h.scheduleFailed(t, "Next("+at.String()+") returned "+nextTime.String()+", not after its argument")
		return 0, false
	}
	next = int64(nextTime.Sub(start))
	if next == math.MaxInt64 || next <= instant { // saturated, or beyond what an int64 of nanoseconds holds
		return math.MaxInt64, true
	}
	return next, true
}

// callScheduler calls s.Next(at), turning a panic into an error.
func callScheduler(s Scheduler, at time.Time) (next time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError{r}
		}
	}()
	return s.Next(at), nil
}

// scheduleFailed counts and logs a schedule that ends for a fault of its
// Scheduler.
func (h *HashedWheelTimer) scheduleFailed(t *timeout, why string) {
	h.counters.scheduleErrors.Add(1)
	h.config.logger.Error("hashedwheel: schedule ended: "+why, "timeout", t)
}
