package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// childEnv, set to 1, makes the test binary run the program instead of the
// tests, with the program's flags as arguments: the crash test starts and
// kills it as a real process.
const childEnv = "DELAYEDORDER_TEST_CHILD"

// TestMain runs the program when started as a child. Otherwise it runs the
// tests, stops the PostgreSQL server if a test started one, and fails the
// package if a test left a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	for _, err := range []error{stopServer(), removeProgram(), leaktest.Find()} {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestRunSettlesEveryOrder runs the program in real time, shortened: every
// order ends paid or cancelled, and the run's account matches the
// database's.
func TestRunSettlesEveryOrder(t *testing.T) {
	cfg := defaultConfig()
	cfg.DB = filepath.Join(t.TempDir(), "orders.db")
	cfg.Orders = 80
	cfg.PlaceOver = 200 * time.Millisecond
	cfg.PayWithin = 300 * time.Millisecond
	cfg.Tick = 10 * time.Millisecond
	var out bytes.Buffer
	r, err := run(context.Background(), cfg, &out, discardLogger())
	require.NoError(t, err)
	require.NoError(t, r.Audit.Err())

	a := r.Audit
	assert.Equal(t, Recovery{}, r.Recovery, "a new database has nothing to recover")
	assert.Equal(t, cfg.Orders, r.Placed)
	assert.Equal(t, cfg.Orders, a.Orders)
	assert.Zero(t, a.Pending)
	assert.Equal(t, r.Paid, a.Paid, "every accepted payment is in the database")
	assert.Equal(t, r.CancelledHere, a.Cancelled, "every cancellation committed was reported once")
	assert.Positive(t, a.Cancelled, "some customers never pay")
	assert.Positive(t, a.Paid)
	assert.Len(t, a.CancelLatenesses, a.Cancelled)
	assert.GreaterOrEqual(t, a.CancelLatenesses[0], time.Duration(0))

	var report bytes.Buffer
	r.print(&report, cfg)
	assert.Contains(t, out.String(), "recovered: rearmed=0 overdue_cancelled=0")
	assert.Contains(t, report.String(), "ok: every order paid or cancelled")
}

func TestRealMainRejectsBadArguments(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, realMain([]string{"-no-such-flag"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no-such-flag")

	stderr.Reset()
	db := filepath.Join(t.TempDir(), "orders.db")
	assert.Equal(t, 1, realMain([]string{"-db", db, "-pay", "1.5"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "invalid configuration")
	assert.NoFileExists(t, db, "nothing is created for a bad configuration")
}

// TestDefaultDatabaseIsInTheWorkingDirectory: without -db the orders go
// to delayedorder.db in the working directory, which the flag's help and
// the README state.
func TestDefaultDatabaseIsInTheWorkingDirectory(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "),
		"`"+defaultDB+"` in the working directory", "the README states the default")

	var stdout, stderr bytes.Buffer
	realMain([]string{"-h"}, &stdout, &stderr) // prints the flags and their defaults
	assert.Contains(t, stderr.String(), `(default "`+defaultDB+`")`)

	t.Chdir(t.TempDir())
	stderr.Reset()
	require.Equal(t, 0, realMain([]string{"-orders", "0"}, &stdout, &stderr), stderr.String())
	assert.FileExists(t, defaultDB)
}

// TestRunOnPostgres runs the program on a PostgreSQL database, shortened:
// one replica holds every order, and the whole database checks out.
func TestRunOnPostgres(t *testing.T) {
	url := postgresURL(t)
	var stdout, stderr bytes.Buffer
	code := realMain([]string{"-db", url, "-replica", "solo", "-orders", "60", "-place-over", "200ms",
		"-pay-within", "300ms", "-tick", "10ms"}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "recovered: rearmed=0 overdue_cancelled=0 claimed=0")
	assert.Contains(t, stdout.String(), "60 orders placed")
	assert.Contains(t, stdout.String(), "ok: every order paid or cancelled")
	assert.NotContains(t, stdout.String(), "FAILED")
}
