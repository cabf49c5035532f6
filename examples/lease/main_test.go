package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// fake is the time of every test of the package: the shared timer runs on
// it, and a test moves it with fake.Advance, which returns once every task
// due by then has run.
var fake = clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))

// useFakeTime replaces the program's shared timer with one on the fake
// clock; TestMain calls it before m.Run, and restore after.
func useFakeTime() (restore func(), err error) {
	onFake, err := hashedwheel.New(hashedwheel.WithClock(fake))
	if err != nil {
		return nil, err
	}
	real := timer
	timer = onFake
	return func() {
		timer = real
		onFake.Stop()
	}, nil
}

// TestMain runs every test of the package on fake time, and checks that
// none leaves a goroutine behind: goleak, ignoring the two goroutines of
// the default pool that the ants package, which the timer uses, starts
// when it is imported.
func TestMain(m *testing.M) {
	restore, err := useFakeTime()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	restore()
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
			goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
		); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// lockedBuffer is a bytes.Buffer that tasks and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLeaseLapsesAtTheEndOfItsTerm(t *testing.T) {
	var events lockedBuffer
	leases := NewLeases(30*time.Minute, &events)
	require.NoError(t, leases.Acquire("db", "alice"))
	fake.Advance(30*time.Minute - time.Second)
	held, _ := leases.Counts()
	assert.Equal(t, 1, held, "held until the end of its term")
	assert.ErrorIs(t, leases.Acquire("db", "bob"), ErrHeld)
	fake.Advance(time.Second) // the term's end, exactly
	held, lapsed := leases.Counts()
	assert.Equal(t, []int{0, 1}, []int{held, lapsed})
	assert.Equal(t, "lease \"db\" of \"alice\" lapsed\n", events.String())
	require.NoError(t, leases.Acquire("db", "bob"), "free once lapsed")
	require.NoError(t, leases.Release("db", "bob"))
}

func TestLeaseIsFreeOnceItLapses(t *testing.T) {
	leases := NewLeases(30*time.Minute, nil)
	require.NoError(t, leases.Acquire("db", "alice"))
	fake.Advance(30*time.Minute - time.Second)
	assert.ErrorIs(t, leases.Acquire("db", "bob"), ErrHeld)
	fake.Advance(time.Second) // to the term's end
	assert.NoError(t, leases.Acquire("db", "bob"), "free once lapsed")
	require.NoError(t, leases.Release("db", "bob"))
}

func TestRenewStartsANewTerm(t *testing.T) {
	leases := NewLeases(30*time.Minute, nil)
	require.NoError(t, leases.Acquire("db", "alice"))
	for range 5 { // renewed every 20 minutes for 100 minutes: never lapses
		fake.Advance(20 * time.Minute)
		require.NoError(t, leases.Renew("db", "alice"))
	}
	assert.ErrorIs(t, leases.Renew("db", "bob"), ErrNotHeld)
	fake.Advance(30*time.Minute - time.Nanosecond)
	_, lapsed := leases.Counts()
	assert.Zero(t, lapsed, "not before the term's end")
	fake.Advance(time.Nanosecond)
	_, lapsed = leases.Counts()
	assert.Equal(t, 1, lapsed, "lapses a term after the last renewal")
	assert.ErrorIs(t, leases.Renew("db", "alice"), ErrNotHeld, "a lapsed lease is not renewed")
}

func TestReportRunsEveryPeriod(t *testing.T) {
	leases := NewLeases(30*time.Minute, nil)
	var out lockedBuffer
	report, err := leases.Report(time.Minute, &out)
	require.NoError(t, err)
	defer report.Cancel()
	require.NoError(t, leases.Acquire("db", "alice"))
	fake.Advance(3 * time.Minute) // the third run is due at 3m, and runs then
	assert.Equal(t, "1 held, 0 lapsed\n1 held, 0 lapsed\n1 held, 0 lapsed\n", out.String())
	require.NoError(t, leases.Release("db", "alice"))
}

// TestAcquireWaitGivesUpAtItsDeadline: the wait's deadline is a wheel
// context on the fake clock, made by the waiting goroutine: the test waits
// until it is scheduled (BlockUntilContext), then advances to it.
func TestAcquireWaitGivesUpAtItsDeadline(t *testing.T) {
	leases := NewLeases(30*time.Minute, nil)
	require.NoError(t, leases.Acquire("db", "alice"))
	pending := timer.PendingTimeouts()
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := timer.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		waited <- leases.AcquireWait(ctx, "db", "bob")
	}()
	wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fake.BlockUntilContext(wait, int(pending)+1), "the wait's deadline is scheduled")
	fake.Advance(5 * time.Second) // the context is done when Advance returns
	err := <-waited
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.NoError(t, leases.Release("db", "alice"))
}

func TestAcquireWaitTakesALeaseAsItLapses(t *testing.T) {
	leases := NewLeases(time.Minute, nil)
	require.NoError(t, leases.Acquire("db", "alice"))
	waited := make(chan error, 1)
	go func() { waited <- leases.AcquireWait(context.Background(), "db", "bob") }()
	fake.Advance(time.Minute)
	require.NoError(t, <-waited, "bob takes the lease alice let lapse")
	require.NoError(t, leases.Release("db", "bob"))
}
