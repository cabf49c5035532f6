package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mustLoad loads a zone from the embedded database (time/tzdata).
func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// TestParseScheduleReadsTimesInTheZoneGiven: an expression without a zone
// is read in the zone given, whatever the zone of the time passed to Next;
// one with CRON_TZ= keeps its own. Asia/Tokyo has no daylight saving time,
// so each day's 09:00 there is 00:00 UTC.
func TestParseScheduleReadsTimesInTheZoneGiven(t *testing.T) {
	tokyo, kolkata := mustLoad(t, "Asia/Tokyo"), mustLoad(t, "Asia/Kolkata")
	monday := time.Date(2026, time.March, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		expr string
		loc  *time.Location
		want time.Time
	}{
		{"0 9 * * MON-FRI", time.UTC, time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC)},
		// The start is Monday 09:00 in Tokyo; Next gives a time after it.
		{"0 9 * * MON-FRI", tokyo, time.Date(2026, time.March, 3, 0, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Asia/Kolkata 0 9 * * MON-FRI", tokyo, time.Date(2026, time.March, 2, 9, 0, 0, 0, kolkata)},
		{"@daily", tokyo, time.Date(2026, time.March, 2, 15, 0, 0, 0, time.UTC)},
	} {
		s, err := parseSchedule(tc.expr, tc.loc)
		require.NoError(t, err, tc.expr)
		for _, from := range []time.Time{monday, monday.In(tokyo), monday.In(kolkata)} {
			next := s.Next(from)
			assert.True(t, tc.want.Equal(next), "%s in %v from %v: got %v, want %v", tc.expr, tc.loc, from, next, tc.want)
			assert.Equal(t, from.Location(), next.Location(), "Next answers in its argument's zone")
		}
	}
}

// TestParseScheduleRefusesBadExpressions: each error names the expression
// and says what is wrong with it; a zone prefix with nothing after it,
// which panics in the cron package, is an error too.
func TestParseScheduleRefusesBadExpressions(t *testing.T) {
	for expr, reason := range map[string]string{
		"":                               "empty spec string",
		"*/15 9-17 * *":                  "expected exactly 5 fields, found 4",
		"0 0 9 * * MON":                  "expected exactly 5 fields, found 6",
		"60 * * * *":                     "above maximum (59)",
		"0 9 * * MONDAY":                 "failed to parse int from MONDAY",
		"CRON_TZ=Nowhere/Land 0 9 * * *": "provided bad location Nowhere/Land",
		"CRON_TZ=UTC":                    "out of range",
	} {
		s, err := parseSchedule(expr, time.UTC)
		assert.Nil(t, s, expr)
		require.Error(t, err, expr)
		assert.Contains(t, err.Error(), `cron expression "`+expr+`": `)
		assert.Contains(t, err.Error(), reason)
	}
}

// everyHour is a schedule on the hour, for the wrappers' tests.
type everyHour struct{}

func (everyHour) Next(t time.Time) time.Time { return t.Truncate(time.Hour).Add(time.Hour) }

// TestLimitRunsGivesNTimesThenZero: the first n times of the schedule it
// wraps, then the zero time for good.
func TestLimitRunsGivesNTimesThenZero(t *testing.T) {
	at := time.Date(2026, time.March, 2, 0, 30, 0, 0, time.UTC)
	l := limitRuns(everyHour{}, 3)
	for i := 1; i <= 3; i++ {
		at = l.Next(at)
		assert.Equal(t, time.Date(2026, time.March, 2, i, 0, 0, 0, time.UTC), at)
		assert.Equal(t, 3-i, l.Left())
	}
	for range 2 {
		assert.True(t, l.Next(at).IsZero())
	}
	assert.Zero(t, l.Left())
	assert.True(t, limitRuns(everyHour{}, 0).Next(at).IsZero(), "n = 0 gives no time")
}

// TestUntilDeadlineEndsBeforeTheDeadline: the times of the schedule it
// wraps that come before the deadline; one at the deadline or after is
// the zero time.
func TestUntilDeadlineEndsBeforeTheDeadline(t *testing.T) {
	end := time.Date(2026, time.March, 2, 3, 0, 0, 0, time.UTC)
	d := untilDeadline(everyHour{}, end)
	at := time.Date(2026, time.March, 2, 0, 30, 0, 0, time.UTC)
	var got []int
	for at = d.Next(at); !at.IsZero(); at = d.Next(at) {
		got = append(got, at.Hour())
	}
	assert.Equal(t, []int{1, 2}, got, "03:00 is the deadline itself")
	assert.True(t, untilDeadline(everyHour{}, end.Add(-time.Hour)).Next(end.Add(-2*time.Hour)).IsZero())
}
