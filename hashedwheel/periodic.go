package hashedwheel

import (
	"fmt"
	"math"
	"time"
)

// A periodic timeout's runs are marked in its state word, so that the
// worker's claim, Reset, Cancel and the run each decide with one CAS.
// claimedBit alone: a run waits to start (a Reset revokes it); runningBit
// alone: a run is running; both: running, and the next run owed. A run due
// while one waits or is owed is skipped. No run starts once cancelled.

// claimRun returns the word w after the worker's claim, its deadline the
// next run's, from + delay; whether to dispatch the run; and 1 if it is
// skipped.
func claimRun(w uint64, from int64, delay time.Duration) (word uint64, dispatch bool, skipped int) {
	word = withDeadline(w, from, delay)
	switch {
	case w&claimedBit != 0:
		return word, false, 1
	case w&runningBit != 0: // owed
		return word | claimedBit, false, 0
	default:
		return word | claimedBit, true, 0
	}
}

// nextFixedRun returns the first d + k·period, k ≥ 1, after from, and how
// many it skipped.
func nextFixedRun(d, from, period int64) (next int64, skipped int) {
	k := max((from-d)/period+1, 1)
	if k > (math.MaxInt64-d)/period {
		return math.MaxInt64, 0
	}
	return d + k*period, int(min(k-1, math.MaxInt32))
}

type scheduledTask struct {
	s       Scheduler
	f       func()
	named   time.Time // Next's time for the run due at at; another deadline is a Reset's
	at      int64
	calling bool // found set: a call of Next called runtime.Goexit
}

func (s *scheduledTask) Run(Timeout) { s.f() }

const (
	scheduledPeriod = -1   // the period of a timeout of ScheduleFunc
	maxCatchUp      = 1000 // bounds the runs a late worker skips one Next call at a time
)

// claimScheduled is claimRun for a timeout of ScheduleFunc, from the
// start of the first tick not ended, the wall clock reading wallNow at
// now: a run is due once the wall clock reaches its named time. ended
// reports the runs' end, the timeout then expired; named is Next's time
// for word's deadline.
func (t *timeout) claimScheduled(w uint64, now int64, wallNow time.Time, from int64) (word uint64, dispatch bool, skipped int, ended bool, named time.Time) {
	s := t.task.(*scheduledTask)
	d := deadlineOf(w)
	named = s.named
	if d != s.at { // a Reset's deadline
		named = wallNow.Add(time.Duration(d - now))
	}
	if wait := named.Sub(wallNow); wait > 0 { // the wall clock stepped back: at max(now + wait, from)
		return withDeadline(w, max(now, from-int64(wait)), wait), false, 0, false, named
	}
	// The first run Next gives after named and after from: a late worker
	// or a step of the wall clock passed the others.
	fromWall := wallNow.Add(time.Duration(from - now))
	nextNamed, ok := t.callNext(s, named)
	for ok && !nextNamed.After(fromWall) {
		if skipped++; skipped == maxCatchUp {
			nextNamed, ok = t.callNext(s, fromWall)
			break
		}
		nextNamed, ok = t.callNext(s, nextNamed)
	}
	base, delay := d, time.Duration(0) // ended: the deadline stays
	if ok {
		base, delay = from, nextNamed.Sub(fromWall)
	}
	word, dispatch, skip := claimRun(w, base, delay)
	if ended = !ok; ended {
		word = word&^stateMask | stateExpired
	}
	return word, dispatch, skipped + skip, ended, nextNamed
}

// callNext returns s.Next(at), and false if the runs end.
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
	case next.IsZero():
	case !next.After(at):
		h.scheduleFailed(t, "Next("+at.String()+") returned "+next.String()+", not after its argument")
	default:
		return next, true
	}
	return time.Time{}, false
}

// callScheduler calls s.Next(at), a panic as err, with no monotonic
// reading: Time.Sub sees clock steps.
func callScheduler(s Scheduler, at time.Time) (next time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError{r}
		}
	}()
	return s.Next(at.Round(0)).Round(0), nil
}

func (h *HashedWheelTimer) scheduleFailed(t *timeout, why string) {
	h.counters.scheduleErrors.Add(1)
	h.config.logger.Error("hashedwheel: schedule ended: "+why, "timeout", t)
}

// Every runs f every period, at a fixed rate: the k-th run is due at the
// call's time + k·period, never earlier. It starts the timer if needed.
// Runs never overlap: one due while the previous runs starts as that one
// returns; one due while another waits, or missed by a late worker, is
// skipped (Stats.PeriodicSkipped). After a successful Cancel, or Stop, no
// run starts. Reset moves the next run to now + delay, keeping the period.
// The timeout is one pending timeout, never IsExpired; a run allocates
// nothing. Every fails with ErrInvalidPeriod for a period of zero or less,
// or below the tick; with ErrNilTask for a nil f; and as NewTimeout does
// otherwise, scheduling nothing.
func (h *HashedWheelTimer) Every(period time.Duration, f func()) (Timeout, error) {
	if f == nil && period > 0 { // an invalid period is reported first
		return nil, ErrNilTask
	}
	if err := h.startForPeriod("Every", period); err != nil {
		return nil, err
	}
	return h.scheduleTimeout(&timeout{task: plainFunc(f)}, period, int64(period))
}

// startForPeriod checks period, naming call, and starts the timer.
func (h *HashedWheelTimer) startForPeriod(call string, period time.Duration) error {
	if period <= 0 {
		return fmt.Errorf("%w: %s(%v): expected a period > 0", ErrInvalidPeriod, call, period)
	}
	if err := h.startIfNeeded(1); err != nil {
		return err
	}
	if tick := time.Duration(h.tickNanos); period < tick {
		return fmt.Errorf("%w: %s(%v) on a timer with a tick of %v: expected a period of at least the tick",
			ErrInvalidPeriod, call, period, tick)
	}
	return nil
}

// ScheduleFunc runs f at each time s gives, the first at s.Next(now), each
// never before it, on the wall clock: after a step of it no run starts
// before its time nor runs twice; after a step forward, the runs passed
// run once, as robfig/cron does, the others skipped, counted up to 1000.
// It starts the timer if needed; the runs otherwise keep Every's
// guarantees. When Next returns the zero time they end, the timeout then
// IsExpired; a Next that returns a time not after its argument, panics or
// calls runtime.Goexit ends them too, counted in Stats.ScheduleErrors; one
// that calls Stop loses no timeout. ScheduleFunc fails with
// ErrInvalidSchedule for a nil s or a first Next not after now, with
// ErrNilTask for a nil f, and as NewTimeout does otherwise.
func (h *HashedWheelTimer) ScheduleFunc(s Scheduler, f func()) (Timeout, error) {
	if isNil(s) {
		return nil, fmt.Errorf("%w: ScheduleFunc(nil)", ErrInvalidSchedule)
	}
	if f == nil {
		return nil, ErrNilTask
	}
	if err := h.startIfNeeded(1); err != nil {
		return nil, err
	}
	now := h.clock.Now().Round(0)
	first, err := callScheduler(s, now)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: Next(%v): %v", ErrInvalidSchedule, now, err)
	case !first.After(now):
		return nil, fmt.Errorf("%w: Next(%v) returned %v: expected a time after it", ErrInvalidSchedule, now, first)
	}
	return h.scheduleTimeout(&timeout{task: &scheduledTask{s: s, f: f, named: first}}, first.Sub(now), scheduledPeriod)
}

// claimSchedules claims the due runs of ScheduleFunc's timeouts after the
// walk, as Next may call Stop or runtime.Goexit; each stays listed until
// claimed, for a goroutine taking over.
func (w *worker) claimSchedules() (claimed bool) {
	h, wh := w.timer, w.wheel
	for len(wh.schedules) > 0 && !w.stopped {
		t := wh.schedules[0]
		// Both clocks read together: the wall clock may have stepped.
		now, wallNow := h.now(), h.clock.Now().Round(0)
		claimed = w.claimSchedule(t, now, wallNow) || claimed
		wh.schedules[0] = nil
		wh.schedules = wh.schedules[1:]
	}
	if len(wh.schedules) == 0 || w.stopped { // Stop cleared the wheel
		clear(wh.schedules)
		wh.schedules = wh.schedules[:0:0]
	}
	return claimed
}

// claimSchedule claims t's due run, files t for its next, and reports if
// it claimed or skipped a run.
func (w *worker) claimSchedule(t *timeout, now int64, wallNow time.Time) bool {
	h, wh := w.timer, w.wheel
	for {
		word := t.word.Load()
		if word&stateMask != stateScheduled {
			return false // the cancellation pass, or Stop, unlinks it
		}
		if deadlineOf(word) > now { // a Reset moved it later
			wh.refile(t)
			return false
		}
		next, run, skipped, ended, named := t.claimScheduled(word, now, wallNow, w.claimFrom)
		if !t.word.CompareAndSwap(word, next) {
			continue
		}
		s := t.task.(*scheduledTask)
		s.named, s.at = named, deadlineOf(next)
		h.counters.periodicSkipped.Add(uint64(skipped))
		if ended {
			wh.unlink(t)
			h.counters.expired.Add(1)
			h.unadmit(1)
		} else {
			wh.refile(t)
		}
		if run {
			w.due = append(w.due, dueRun{Deadline: deadlineOf(word), Task: t})
		}
		return run || skipped > 0 || ended
	}
}

// runPeriodic runs the claimed run, unless revoked, then any run owed.
func (t *timeout) runPeriodic() {
	if !t.startRun() {
		return
	}
	ended := false
	defer func() {
		if !ended { // runtime.Goexit: leave no run marked
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

// startRun starts the claimed run, unless revoked, running or cancelled.
func (t *timeout) startRun() bool {
	for {
		w := t.word.Load()
		if w&claimedBit == 0 || w&runningBit != 0 || w&stateMask == stateCancelled {
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
		if w&claimedBit != 0 && w&stateMask != stateCancelled {
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
