package hashedwheel

import (
	"fmt"
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

// claimEvery returns the state word of a timeout of Every, read as w and
// due, once the worker claims its run, from being the start of the first
// tick not ended at now; whether to dispatch the run; and how many runs it
// skipped.
func (t *timeout) claimEvery(w uint64, from int64) (word uint64, dispatch bool, skipped int) {
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

// everyTask is the task of a timeout of Every: f.
type everyTask struct{ f func() }

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
	// The worker's: whether a call of s.Next is in progress, which, found
	// set, is one that never returned (it called runtime.Goexit).
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
	named time.Time
	at    int64
}

// commit records the claim c.
func (s *scheduledTask) commit(c scheduleClaim) { s.named, s.at = c.named, c.at }

// claimScheduled is claimEvery for a timeout of ScheduleFunc, read as w
// and due by now, the wall clock reading wallNow at now, from being the
// start of the first tick not ended at now. The run is due once the wall clock has
// reached the time Next named for it: after a step back of the wall clock
// it is filed again for that time, no run claimed. Otherwise the claim asks
// Next, from that time, for the next run's, skipping those the wall clock
// has passed, and ends the runs if Next returns the zero time, or, counted
// and logged, a time not after its argument, or panics. It reports what
// claimEvery does, whether the runs end, the timeout then expired, and
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
		return word, false, 0, false, scheduleClaim{named: named, at: deadlineOf(word)}
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
	return word, dispatch, skipped, ended, scheduleClaim{named: nextNamed, at: deadlineOf(word)}
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

// claimSchedules claims the runs of the timeouts of ScheduleFunc that the
// walk found due, once the walk is done and the tasks it claimed are in
// w.due: their Scheduler's Next is user code, which may call Stop or
// runtime.Goexit, or panic, and must find the wheel in order. Each stays
// listed until its claim is done, so that a goroutine that takes over
// after a Goexit finds it again, and ends its runs (see callNext). It
// reports whether it claimed or skipped any run.
func (w *worker) claimSchedules() (claimed bool) {
	h, wh := w.timer, w.wheel
	for len(wh.schedules) > 0 && !w.stopped {
		t := wh.schedules[0]
		// Both clocks read together: the wall clock may have stepped since
		// the walk, and since the timer started.
		now, wallNow := h.now(), h.clock.Now().Round(0)
		if w.claimSchedule(t, now, wallNow) {
			claimed = true
		}
		wh.schedules[0] = nil
		wh.schedules = wh.schedules[1:]
	}
	if len(wh.schedules) == 0 || w.stopped { // Stop cleared the wheel
		clear(wh.schedules)
		wh.schedules = wh.schedules[:0:0]
	}
	return claimed
}

// claimSchedule claims the run of t, a timeout of ScheduleFunc found due,
// at now and wallNow, and files it for its next run, unless it was
// cancelled or moved by a Reset meanwhile; it reports whether it claimed
// or skipped a run.
func (w *worker) claimSchedule(t *timeout, now int64, wallNow time.Time) bool {
	h, wh := w.timer, w.wheel
	for {
		word := t.word.Load()
		if stateOf(word) != stateScheduled {
			return false // cancelled: the cancellation pass, or Stop, unlinks it
		}
		if deadlineOf(word) > now { // a Reset moved it later
			wh.refile(t)
			return false
		}
		next, run, skipped, ended, c := t.claimScheduled(word, now, wallNow, w.claimFrom)
		if !t.word.CompareAndSwap(word, next) {
			continue
		}
		t.task.(*scheduledTask).commit(c)
		h.counters.periodicSkipped.Add(uint64(skipped))
		if ended {
			wh.unlink(t)
			w.countExpired(1)
		} else {
			wh.refile(t)
		}
		if run {
			w.due = append(w.due, dueRun{deadlineOf(word), t})
		}
		return run || skipped > 0 || ended
	}
}

// runPeriodic runs the claimed run of a periodic timeout, unless a Reset,
// Cancel or Stop revoked it, then the run owed meanwhile, if any.
func (t *timeout) runPeriodic() {
	if !t.startRun() {
		return
	}
	ended := false
	defer func() {
		if !ended { // the task called runtime.Goexit: no run is left marked
			t.word.And(^uint64(claimedBit | runningBit))
		}
	}()
	for {
		t.timer.counters.periodicRuns.Add(1)
		t.runTask()
		if !t.endRun() {
			ended = true
			return
		}
	}
}

// startRun starts the claimed run, if it is still claimed, no run is
// running and the timeout is not cancelled.
func (t *timeout) startRun() bool {
	for {
		w := t.word.Load()
		if w&claimedBit == 0 || w&runningBit != 0 || stateOf(w) == stateCancelled {
			return false
		}
		if t.word.CompareAndSwap(w, w&^claimedBit|runningBit) {
			return true
		}
	}
}

// endRun ends a run and reports whether the run owed meanwhile starts now.
func (t *timeout) endRun() bool {
	for {
		w := t.word.Load()
		if w&claimedBit != 0 && stateOf(w) != stateCancelled {
			if t.word.CompareAndSwap(w, w&^claimedBit) {
				return true
			}
			continue
		}
		if t.word.CompareAndSwap(w, w&^(claimedBit|runningBit)) {
			return false
		}
	}
}
