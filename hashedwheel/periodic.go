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

// claimPeriodic returns the state word of a timeout of Every, read as w
// and due, once the worker claims its run, from being the start of the
// first tick not ended at now; whether to dispatch the run; and how many
// runs it skipped.
func (t *timeout) claimPeriodic(w uint64, from int64) (word uint64, dispatch bool, skipped int) {
	next, skipped := nextFixedRun(deadlineOf(w), from, t.period)
	word, dispatch, skip := claimRun(w, next)
	if skip {
		skipped++
	}
	return word, dispatch, skipped
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

// markRunFor records, once the worker's claim of a periodic run holds, the
// deadline d the run is for, by which an inline dispatch sorts it: the
// state word holds the next run's deadline, whole periods later.
func (t *timeout) markRunFor(d int64) {
	switch task := t.task.(type) {
	case *everyTask:
		task.runFor = d
	case *scheduledTask:
		task.runFor = d
	}
}

// runFor returns the deadline of the run that the worker claimed last.
func (t *timeout) runFor(word uint64) int64 {
	switch task := t.task.(type) {
	case *everyTask:
		return task.runFor
	case *scheduledTask:
		return task.runFor
	}
	return deadlineOf(word) - t.period
}

// everyTask is the task of a timeout of Every: f, and the deadline of its
// run claimed last, the worker's.
type everyTask struct {
	f      func()
	runFor int64
}

func (e *everyTask) Run(Timeout) { e.f() }

// scheduledTask is the task of a timeout of ScheduleFunc: f, run at the
// times s gives.
type scheduledTask struct {
	s Scheduler
	f func()
	// The wall time Next named for the run due at the deadline at, as the
	// state word holds it: a deadline other than at is a Reset's. Set by
	// ScheduleFunc before the timeout is published, then by the worker.
	named time.Time
	at    int64
	// The worker's: the deadline of the run dispatched last, and whether a
	// call of s.Next is in progress, which, found set, is one that never
	// returned (it called runtime.Goexit).
	runFor  int64
	calling bool
}

func (s *scheduledTask) Run(Timeout) { s.f() }

// scheduledPeriod is the period of a timeout of ScheduleFunc, whose
// Scheduler gives its runs.
const scheduledPeriod = -1

// maxCatchUp bounds the runs of a schedule that a late worker skips one
// Next call at a time; past it, one call finds the first run to come.
const maxCatchUp = 1000

// scheduleClaim is what the worker's claim of a schedule's due run
// decides, for commit once the claim's compare-and-swap holds.
type scheduleClaim struct {
	named  time.Time
	at     int64
	runFor int64
}

// commit records the claim c.
func (s *scheduledTask) commit(c scheduleClaim) { s.named, s.at, s.runFor = c.named, c.at, c.runFor }

// claimScheduled is claimPeriodic for a timeout of ScheduleFunc, read as w
// and due by now, the wall clock reading wallNow at now, from being the
// start of the first tick not ended at now. The run is due once the wall clock has
// reached the time Next named for it: after a step back of the wall clock
// it is filed again for that time, no run claimed. Otherwise the claim asks
// Next, from that time, for the next run's, skipping those the wall clock
// has passed, and ends the runs if Next returns the zero time, or, counted
// and logged, a time not after its argument, or panics. It reports what
// claimPeriodic does, whether the runs end, the timeout then expired, and
// the claim to commit.
func (t *timeout) claimScheduled(w uint64, now int64, wallNow time.Time, from int64) (word uint64, dispatch bool, skipped int, ended bool, c scheduleClaim) {
	s := t.task.(*scheduledTask)
	d := deadlineOf(w)
	named := s.named
	if d != s.at { // a Reset's deadline: the run is for the wall time it stands for
		named = wallNow.Add(time.Duration(d - now))
	}
	if wait := named.Sub(wallNow); wait > 0 { // the wall clock stepped back
		word = withDeadline(w, max(deadline(now, wait), from))
		return word, false, 0, false, scheduleClaim{named: named, at: deadlineOf(word), runFor: s.runFor}
	}
	fromWall := wallNow.Add(time.Duration(from - now)) // the wall clock's reading at from
	nextNamed, skipped, ok := t.nextScheduledRun(s, named, fromWall)
	next := d
	if ok {
		next = deadline(from, nextNamed.Sub(fromWall))
	} else {
		ended = true
	}
	word, dispatch, skip := claimRun(w, next)
	if skip {
		skipped++
	}
	if ended {
		word = withState(word, stateExpired)
	}
	c = scheduleClaim{named: nextNamed, at: deadlineOf(word), runFor: s.runFor}
	if dispatch {
		c.runFor = d
	}
	return word, dispatch, skipped, ended, c
}

// nextScheduledRun returns the wall time of the run that follows the
// schedule's run named for named, the first Next gives after fromWall, in
// a tick yet to end, and how many runs it skipped; ok is false if the runs
// end.
func (t *timeout) nextScheduledRun(s *scheduledTask, named, fromWall time.Time) (next time.Time, skipped int, ok bool) {
	next, ok = t.callNext(s, named)
	for ok && !next.After(fromWall) { // due in a tick that has ended
		skipped++
		if skipped == maxCatchUp {
			next, ok = t.callNext(s, fromWall)
			break
		}
		next, ok = t.callNext(s, next)
	}
	return next, skipped, ok
}

// callNext returns the time s.Next gives after at, and false if the runs
// end.
func (t *timeout) callNext(s *scheduledTask, at time.Time) (next time.Time, ok bool) {
	h := t.timer
	if s.calling { // an earlier call never returned
		h.scheduleFailed(t, "Next called runtime.Goexit")
		return time.Time{}, false
	}
	s.calling = true
	next, err := callScheduler(s.s, at)
	s.calling = false
	switch {
	case err != nil:
		h.scheduleFailed(t, err.Error())
		return time.Time{}, false
	case next.IsZero():
		return time.Time{}, false
	case !next.After(at):
		h.scheduleFailed(t, "Next("+at.String()+") returned "+next.String()+", not after its argument")
		return time.Time{}, false
	}
	return next, true
}

// callScheduler calls s.Next(at), turning a panic into an error. Both
// times are wall times: it strips their monotonic readings, by which
// Time.Sub would ignore a step of the wall clock.
func callScheduler(s Scheduler, at time.Time) (next time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError{r}
		}
	}()
	return s.Next(at.Round(0)).Round(0), nil
}

// scheduleFailed counts and logs a schedule that ends for a fault of its
// Scheduler.
func (h *HashedWheelTimer) scheduleFailed(t *timeout, why string) {
	h.counters.scheduleErrors.Add(1)
	h.config.logger.Error("hashedwheel: schedule ended: "+why, "timeout", t)
}
