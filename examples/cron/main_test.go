package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runFake runs the program on the fake clock with no pause between
// simulated hours, and returns what it printed.
func runFake(t *testing.T, cfg config) string {
	t.Helper()
	cfg.Pace = 0
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), cfg, &out, discardLogger()))
	return out.String()
}

// TestRunGoesThroughAWeek: on the default flags the program's week on the
// fake clock runs each job at its times, a nightly report each night, the
// reminders three times and the sale's pushes until it ends, and Stop
// returns the two schedules still live. A zone moves nothing, since the
// fake clock starts at midnight in it.
func TestRunGoesThroughAWeek(t *testing.T) {
	for _, zone := range []string{"UTC", "Asia/Tokyo"} {
		t.Run(zone, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.TZ = zone
			out := runFake(t, cfg)
			assert.Contains(t, out, "On a fake clock from Mon 02 Mar 00:00:00, 7 days, times in "+zone+":\n")
			assert.Contains(t, out, `first at Mon 02 Mar 08:30:00, until Wed 04 Mar 12:00:00`)
			assert.Contains(t, out, "Tue 03 Mar 02:00:00.000  nightly report: price cache loaded 36 times (last at 17:45:00.000); reminders sent: 1; price pushes: 2\n")
			assert.Contains(t, out, "Sun 08 Mar 02:00:00.000  nightly report: price cache loaded 0 times; reminders sent: 3; price pushes: 5\n")
			assert.Equal(t, 7, strings.Count(out, "nightly report"))
			assert.Contains(t, out, "Wed 04 Mar 10:00:00.000  payment reminder 3 sent")
			assert.NotContains(t, out, "payment reminder 4")
			assert.Contains(t, out, "Wed 04 Mar 08:30:00.000  sale prices pushed to the marketplace (5)\n")
			assert.NotContains(t, out, "(6)")
			assert.Contains(t, out, "  price cache  ran 180 times, next at Mon 09 Mar 09:00:00\n")
			assert.Contains(t, out, "  reminders    ran   3 times, its schedule ended\n")
			assert.Contains(t, out, "  sale prices  ran   5 times, its schedule ended\n")
			assert.Contains(t, out, "Stop returned 2 live schedules; pending=0 scheduled=4 expired=2")
			assert.Contains(t, out, "periodic_runs=195 periodic_skipped=0 schedule_errors=0")
		})
	}
}

// TestRunVerbosePrintsEachRefresh: -v adds a line per cache refresh.
func TestRunVerbosePrintsEachRefresh(t *testing.T) {
	cfg := defaultConfig()
	cfg.Verbose, cfg.Days = true, 1
	out := runFake(t, cfg)
	assert.Equal(t, 36, strings.Count(out, "price cache loaded ("))
	assert.Contains(t, out, "Mon 02 Mar 17:45:00.000  price cache loaded (36)\n")
}

// TestRunOnTheWallClockStopsWhenInterrupted: with -fake=false the jobs
// wait for the wall clock until ctx is done, then Stop returns all four.
func TestRunOnTheWallClockStopsWhenInterrupted(t *testing.T) {
	cfg := defaultConfig()
	cfg.Fake = false
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, cfg, &out, discardLogger()))
	assert.Contains(t, out.String(), "On the wall clock from ")
	assert.Contains(t, out.String(), "until interrupted, times in UTC:\n")
	assert.Contains(t, out.String(), "Stop returned 4 live schedules")
}

// TestRealMainRefusesBadInput: a bad expression, zone or number is
// refused with an error that names it, and nothing runs.
func TestRealMainRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-refresh", "*/15 9-17 * *"}, 1, `cron expression "*/15 9-17 * *": expected exactly 5 fields, found 4`},
		{[]string{"-report", "0 2 * * *", "-remind", "0 25 * * *"}, 1, `cron expression "0 25 * * *": end of range (25) above maximum (23)`},
		{[]string{"-sale", "CRON_TZ=Mars/Olympus 0 * * * *"}, 1, "provided bad location Mars/Olympus"},
		{[]string{"-report", "0 0 30 2 *"}, 1, `report "0 0 30 2 *": hashedwheel: invalid schedule`},
		{[]string{"-tz", "Europe/Atlantis"}, 1, "-tz: unknown time zone Europe/Atlantis"},
		{[]string{"-reminders", "0"}, 1, "-reminders 0: expected at least 1"},
		{[]string{"-sale-for", "-1h"}, 1, "-sale-for -1h0m0s: expected a duration above zero"},
		{[]string{"-days", "0"}, 1, "-days 0: expected at least 1"},
		{[]string{"-tick", "1us"}, 1, "WithTickDuration(1µs)"},
		{[]string{"-refresh", "*/15", "9-17", "*", "*", "MON-FRI"}, 2, "quote a cron expression"},
		{[]string{"-nope"}, 2, "flag provided but not defined: -nope"},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(tc.args, &stdout, &stderr)
		assert.Equal(t, tc.code, code, "%q", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%q", tc.args)
		assert.Empty(t, stdout.String(), "%q: nothing ran", tc.args)
	}
}
