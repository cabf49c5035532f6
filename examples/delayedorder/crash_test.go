package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// child is the program running as a separate process: this test binary,
// started with childEnv set.
type child struct {
	cmd    *exec.Cmd
	lines  chan string // its standard output, a line at a time; closed at its end
	stderr *lockedBuffer
}

// lockedBuffer is a bytes.Buffer that the goroutine exec starts to copy a
// child's standard error writes while a failing test may read it.
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

// startChild starts this test binary as the program.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return startProcess(t, exe, append(os.Environ(), childEnv+"=1"), args...)
}

// startProcess starts the program at exe, reading its output.
func startProcess(t *testing.T, exe string, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(exe, args...), lines: make(chan string, 1<<16), stderr: &lockedBuffer{}}
	c.cmd.Env = env
	c.cmd.Stderr = c.stderr
	stdout, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

// wait reads the rest of the child's output and waits for it to exit.
func (c *child) wait(into *[]string) error {
	for line := range c.lines {
		*into = append(*into, line)
	}
	return c.cmd.Wait()
}

var eventLine = regexp.MustCompile(`^(placed|paid|refused|cancelled) id=(\d+)`)

// eventCounts counts the event lines of each kind.
func eventCounts(lines []string) map[string]int {
	n := map[string]int{}
	for _, l := range lines {
		if m := eventLine.FindStringSubmatch(l); m != nil {
			n[m[1]]++
		}
	}
	return n
}

// TestKilledMidFlightLosesNothing runs the program as a real process,
// placing orders, taking payments and cancelling unpaid orders, kills it
// with SIGKILL while it does all three, keeps it down for a moment and
// starts it again on the same database. Then the database, and the events
// both processes printed once their transactions committed, must show that
// no order was lost or left pending, none cancelled twice, after payment or
// before its deadline, and every acknowledged payment kept.
func TestKilledMidFlightLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes for about 6 s of real time")
	}
	const (
		orders    = 400
		payWithin = 2 * time.Second
	)
	db := filepath.Join(t.TempDir(), "orders.db")
	common := []string{"-db", db, "-pay-within", payWithin.String(), "-tick", "10ms", "-events"}

	// First life: orders placed over 4 s; killed once 20 orders have been
	// cancelled and 20 paid, about 2.2 s in, while orders are still placed,
	// paid and cancelled.
	first := startChild(t, append(common, "-orders", strconv.Itoa(orders), "-place-over", "4s", "-pay", "0.6", "-seed", "7")...)
	var firstOut []string
	giveUp := time.After(15 * time.Second)
	for n := map[string]int{}; n["cancelled"] < 20 || n["paid"] < 20; {
		select {
		case line, ok := <-first.lines:
			require.True(t, ok, "the program ended before it was killed:\n%s\n%s", strings.Join(firstOut, "\n"), first.stderr)
			firstOut = append(firstOut, line)
			if m := eventLine.FindStringSubmatch(line); m != nil {
				n[m[1]]++
			}
		case <-giveUp:
			require.NoError(t, first.cmd.Process.Kill())
			require.Error(t, first.wait(&firstOut))
			t.Fatalf("no progress in 15 s:\n%s\n%s", strings.Join(firstOut, "\n"), first.stderr)
		}
	}
	require.NoError(t, first.cmd.Process.Kill()) // SIGKILL: no deferred call, no Close
	err := first.wait(&firstOut)
	require.Error(t, err)
	require.Contains(t, err.Error(), "killed", "stderr:\n%s", first.stderr)
	firstEvents := eventCounts(firstOut)
	require.Less(t, firstEvents["placed"], orders, "killed while still placing orders")

	// Down for 300ms: the deadlines of some pending orders pass meanwhile.
	time.Sleep(300 * time.Millisecond)

	second := startChild(t, append(common, "-orders", "0")...)
	var secondOut []string
	done := make(chan error, 1)
	go func() { done <- second.wait(&secondOut) }()
	select {
	case err := <-done:
		require.NoError(t, err, "second life:\n%s\n%s", strings.Join(secondOut, "\n"), second.stderr)
	case <-time.After(15 * time.Second):
		require.NoError(t, second.cmd.Process.Kill())
		<-done
		t.Fatalf("the second life did not settle the orders in 15 s:\n%s\n%s", strings.Join(secondOut, "\n"), second.stderr)
	}
	out := strings.Join(secondOut, "\n")
	require.Contains(t, out, "ok: every order paid or cancelled")
	var rearmed, overdue int
	i := slices.IndexFunc(secondOut, func(l string) bool { return strings.HasPrefix(l, "recovered:") })
	require.GreaterOrEqual(t, i, 0, out)
	_, err = fmt.Sscanf(secondOut[i], "recovered: rearmed=%d overdue_cancelled=%d", &rearmed, &overdue)
	require.NoError(t, err, out)
	assert.Positive(t, overdue, "orders due while no process ran are cancelled at start")
	t.Logf("first life: %v; second: %d re-armed, %d overdue at start, %v",
		firstEvents, rearmed, overdue, eventCounts(secondOut))

	checkDatabase(t, db, payWithin, append(firstOut, secondOut...), rearmed+overdue)
}

// dbOrder is an order as the test reads it, without the program's Store.
type dbOrder struct {
	created, deadline, settled int64
	status                     string
	cancellations              []int64
}

// checkDatabase reads the database on its own and checks it against the
// events the program printed.
func checkDatabase(t *testing.T, path string, payWithin time.Duration, events []string, recovered int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()

	orders := map[int64]*dbOrder{}
	rows, err := db.Query(`SELECT id, created_ms, deadline_ms, status, coalesce(settled_ms, -1) FROM orders`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		o := &dbOrder{}
		require.NoError(t, rows.Scan(&id, &o.created, &o.deadline, &o.status, &o.settled))
		orders[id] = o
	}
	require.NoError(t, rows.Err())
	rows.Close()
	rows, err = db.Query(`SELECT order_id, cancelled_ms FROM cancellations`)
	require.NoError(t, err)
	for rows.Next() {
		var id, ms int64
		require.NoError(t, rows.Scan(&id, &ms))
		require.Contains(t, orders, id, "a cancellation of an order that does not exist")
		orders[id].cancellations = append(orders[id].cancellations, ms)
	}
	require.NoError(t, rows.Err())
	rows.Close()

	var paid, cancelled int
	for id, o := range orders {
		assert.Equal(t, payWithin.Milliseconds(), o.deadline-o.created, "order %d: deadline", id)
		switch o.status {
		case "paid":
			paid++
			assert.Empty(t, o.cancellations, "order %d: paid and cancelled", id)
		case "cancelled":
			cancelled++
			if assert.Len(t, o.cancellations, 1, "order %d: cancellations", id) {
				assert.GreaterOrEqual(t, o.cancellations[0], o.deadline, "order %d: cancelled before its deadline", id)
				assert.Equal(t, o.cancellations[0], o.settled, "order %d", id)
			}
		default:
			t.Errorf("order %d is %s after the program settled every order", id, o.status)
		}
	}
	assert.Equal(t, len(orders), paid+cancelled)
	assert.GreaterOrEqual(t, recovered, 1, "orders were pending when the program was killed")

	// What the program acknowledged, in either life, the database keeps.
	seenCancelled := map[int64]bool{}
	for _, line := range events {
		m := eventLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, err := strconv.ParseInt(m[2], 10, 64)
		require.NoError(t, err)
		o, ok := orders[id]
		if !assert.True(t, ok, "order %d acknowledged as %s, not in the database", id, m[1]) {
			continue
		}
		switch m[1] {
		case "paid":
			assert.Equal(t, "paid", o.status, "order %d: acknowledged payment lost", id)
		case "refused":
			assert.Equal(t, "cancelled", o.status, "order %d: payment refused, yet not cancelled", id)
		case "cancelled":
			assert.Equal(t, "cancelled", o.status, "order %d", id)
			assert.False(t, seenCancelled[id], "order %d reported cancelled twice", id)
			seenCancelled[id] = true
		}
	}
}
