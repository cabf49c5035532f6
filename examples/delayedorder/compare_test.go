package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

var compareRounds = flag.Int("compare", 0, "rounds of TestCompareWithPollingQueue (0: skip it); run it without -race")

// compareIdle is how long the replicas are left idle while their
// statements are counted.
const compareIdle = 20 * time.Second

// design is one of the two shops compared: the program's replicas, or
// those of riverqueue/, the same shop on river's scheduled jobs.
type design struct {
	name string
	exe  func(t *testing.T) string
	args func(url, name string) []string
}

var designs = []design{
	{
		name: "wheel",
		exe:  programPath,
		args: func(url, name string) []string {
			return []string{"-db", url, "-replica", name, "-pay-within", killPayWithin.String(),
				"-window", killWindow.String(), "-lease", killLease.String(), "-tick", compareTick.String()}
		},
	},
	{
		name: "river",
		exe:  riverPath,
		args: func(url, _ string) []string { return []string{"-db", url, "-pay-within", killPayWithin.String()} },
	},
}

// compareTick is the wheel's tick in the comparison.
const compareTick = 100 * time.Millisecond

// measured is what one run of a design measured.
type measured struct {
	late                       []time.Duration // p50, p99, max
	idlePerReplica, busyPerRep float64         // statements per second per replica
	made, paid, cancelled      int
	customers                  string // what the customers' process said they did
}

// TestCompareWithPollingQueue runs the kill test's workload, with no kill,
// on the program's replicas and on riverqueue/'s, -compare rounds each,
// alternately, each on a new database, and prints the cancellations'
// lateness and the statements each replica sent a second, idle for 20 s
// and under the load: median and range over the rounds.
//
//	go test -run CompareWithPollingQueue -v -timeout 30m . -compare 5
func TestCompareWithPollingQueue(t *testing.T) {
	if *compareRounds <= 0 {
		t.Skip("a comparison that takes minutes: -compare N runs it")
	}
	runs := map[string][]measured{}
	for round := range *compareRounds {
		order := designs
		if round%2 == 1 {
			order = []design{designs[1], designs[0]}
		}
		for _, d := range order {
			r := compareRun(t, d, uint64(round+1))
			t.Logf("round %d, %s: made %d, paid %d, cancelled %d; late p50 %v, p99 %v, max %v; statements/s per replica idle %.2f, loaded %.0f; customers: %s",
				round+1, d.name, r.made, r.paid, r.cancelled, r.late[0], r.late[1], r.late[2], r.idlePerReplica, r.busyPerRep, r.customers)
			runs[d.name] = append(runs[d.name], r)
		}
	}
	fmt.Printf("%d rounds, median (min to max)\n", *compareRounds)
	fmt.Println("| | lateness p50 | p99 | max | statements/s per replica, idle | under load |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, d := range designs {
		rs := runs[d.name]
		late := func(i int) string {
			return spread(rs, func(r measured) float64 { return float64(r.late[i]) / float64(time.Millisecond) }, "%.0f ms")
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", d.name, late(0), late(1), late(2),
			spread(rs, func(r measured) float64 { return r.idlePerReplica }, "%.2f"),
			spread(rs, func(r measured) float64 { return r.busyPerRep }, "%.0f"))
	}
}

// spread is the median of f over the runs, and its range.
func spread(rs []measured, f func(measured) float64, format string) string {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return fmt.Sprintf(format+" ("+format+" to "+format+")", v[len(v)/2], v[0], v[len(v)-1])
}

// compareRun runs the workload once on three replicas of d.
func compareRun(t *testing.T, d design, seed uint64) measured {
	base := postgresURL(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var roles []string
	replicas, urls := startReplicas(t, d.exe(t), killReplicas, func(i int) (string, []string) {
		name := fmt.Sprintf("%s%d", d.name, i+1)
		roles = append(roles, name)
		_, err := conn.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s LOGIN SUPERUSER;
			EXCEPTION WHEN duplicate_object THEN NULL; END $$`, name))
		require.NoError(t, err)
		u, err := url.Parse(base)
		require.NoError(t, err)
		u.User = url.User(name)
		q := u.Query()
		q.Set("pool_max_conns", "16") // either design: river's workers and listener share the pool with the API
		u.RawQuery = q.Encode()
		return name, d.args(u.String(), name)
	})
	defer func() {
		for _, r := range replicas {
			r.stop(t)
		}
	}()
	statements := func() int64 { // the replicas' statements since the last reset
		var n int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND userid::regrole::text = ANY ($1)`, roles).Scan(&n))
		return n
	}
	reset := func() {
		_, err := conn.Exec(ctx, `SELECT pg_stat_statements_reset()`)
		require.NoError(t, err)
	}
	var r measured

	time.Sleep(2 * time.Second) // the replicas' start, not counted
	reset()
	time.Sleep(compareIdle) // real time is the subject: what idle replicas cost
	r.idlePerReplica = float64(statements()) / compareIdle.Seconds() / killReplicas

	reset()
	start := time.Now()
	customers := startCustomers(t, urls, seed)
	var out []string
	require.NoError(t, customers.wait(&out), "customers:\n%s", customers.stderr)
	for _, line := range out {
		if strings.HasPrefix(line, "this run:") {
			r.customers = line
		}
	}
	for {
		var pending int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM orders WHERE status = 'pending'`).Scan(&pending))
		if pending == 0 {
			break
		}
		require.Less(t, time.Since(start), 2*time.Minute, "orders still pending")
		time.Sleep(20 * time.Millisecond) // the database's state: nothing to wait on but a poll
	}
	r.busyPerRep = float64(statements()) / time.Since(start).Seconds() / killReplicas

	var late []time.Duration
	rows, err := conn.Query(ctx, `SELECT c.cancelled_at - o.deadline FROM orders o JOIN cancellations c ON c.order_id = o.id`)
	require.NoError(t, err)
	late, err = pgx.CollectRows(rows, pgx.RowTo[time.Duration])
	require.NoError(t, err)
	require.NotEmpty(t, late)
	slices.Sort(late)
	r.late = []time.Duration{late[len(late)/2], late[len(late)*99/100], late[len(late)-1]}
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'paid'),
		count(*) FILTER (WHERE status = 'cancelled') FROM orders`).Scan(&r.made, &r.paid, &r.cancelled))
	return r
}

// riverPath builds riverqueue/, a module of its own, once.
func riverPath(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(programPath(t))
	exe := filepath.Join(dir, "riverqueue")
	if _, err := os.Stat(exe); err == nil {
		return exe
	}
	cmd := exec.Command("go", "build", "-o", exe, ".")
	cmd.Dir = "riverqueue"
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build riverqueue:\n%s", strings.TrimSpace(string(out)))
	return exe
}
