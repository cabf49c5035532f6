package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// parseSchedule parses a standard cron expression (five fields, or a
// descriptor such as @daily) whose times are read in loc, unless the
// expression names its own zone with a CRON_TZ= or TZ= prefix. The
// Schedule it returns is a hashedwheel.Scheduler.
//
// Without a zone, a cron schedule reads each time in the time's own
// Location: the timer's clock's, which for the runtime's clock is the
// machine's zone. Setting loc makes the schedule the same on every machine.
func parseSchedule(expr string, loc *time.Location) (s cron.Schedule, err error) {
	defer func() {
		// cron v3.0.1 panics on a zone prefix with no fields after it.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cron expression %q: %v", expr, r)
		}
	}()
	s, err = cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	if spec, ok := s.(*cron.SpecSchedule); ok && !hasZone(expr) {
		spec.Location = loc
	}
	return s, nil
}

// hasZone reports whether a cron expression names its zone.
func hasZone(expr string) bool {
	expr = strings.TrimSpace(expr)
	return strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=")
}

// limitRuns returns a Scheduler that gives the first n times s gives, then
// the zero time, which ends the runs of ScheduleFunc: a job run n times at
// most. A time the timer skipped (due while the previous run still ran,
// or missed by a late worker) counts as given.
func limitRuns(s hashedwheel.Scheduler, n int) *limited {
	l := &limited{s: s}
	l.left.Store(int64(n))
	return l
}

// limited is the Scheduler of limitRuns. Its Next is called by one
// goroutine at a time, as a timer calls it; Left may be called from any.
type limited struct {
	s    hashedwheel.Scheduler
	left atomic.Int64 // the times still to give
}

// Next returns s.Next(t) while times are left to give, then the zero time.
func (l *limited) Next(t time.Time) time.Time {
	if l.left.Load() <= 0 {
		return time.Time{}
	}
	next := l.s.Next(t)
	if !next.IsZero() {
		l.left.Add(-1)
	}
	return next
}

// Left returns how many more times the schedule gives.
func (l *limited) Left() int { return int(l.left.Load()) }

// untilDeadline returns a Scheduler that gives the times s gives before
// end, then the zero time: a job that stops when, say, a sale ends.
func untilDeadline(s hashedwheel.Scheduler, end time.Time) deadlined {
	return deadlined{s: s, end: end}
}

// deadlined is the Scheduler of untilDeadline.
type deadlined struct {
	s   hashedwheel.Scheduler
	end time.Time
}

// Next returns s.Next(t) if it is before the end, the zero time otherwise.
func (d deadlined) Next(t time.Time) time.Time {
	next := d.s.Next(t)
	if next.IsZero() || !next.Before(d.end) {
		return time.Time{}
	}
	return next
}
