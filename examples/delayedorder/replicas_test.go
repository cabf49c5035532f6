package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var killRounds = flag.Int("kill-rounds", 3, "rounds of TestKilledReplicaLosesNothing, each on a new database")

// The kill test's shop: 20 000 orders placed over 10 s, each to be paid
// within 4 s, a third of them paid before their deadline; three replicas,
// each claiming the orders due within 3 s, with a lease of 2 s. The tick,
// half a second, is what the bounds of the test are counted in: a tick
// for the wheel, a tick for the cancellation's transaction, and a tick for
// a 2-core machine running the three replicas, the server and the race
// detector beside them.
const (
	killOrders    = 20000
	killPlaceOver = 10 * time.Second
	killPayWithin = 4 * time.Second
	killWindow    = 3 * time.Second
	killLease     = 2 * time.Second
	killTick      = 500 * time.Millisecond
	killDown      = 3500 * time.Millisecond // the victim's downtime
	killReplicas  = 3
)

// program is the program built without the race detector, once per test
// binary, for the tests whose subject is timing across processes: under
// the race detector three replicas and their customers need more than
// two cores. The in-process tests check the same code under it.
var program struct {
	once      sync.Once
	dir, path string
	err       error
}

// programPath builds the program if need be and returns its path.
func programPath(t *testing.T) string {
	t.Helper()
	program.once.Do(func() {
		if program.dir, program.err = os.MkdirTemp("", "delayedorder-bin"); program.err != nil {
			return
		}
		program.path = filepath.Join(program.dir, "delayedorder")
		out, err := exec.Command("go", "build", "-o", program.path, ".").CombinedOutput()
		if err != nil {
			program.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, program.err)
	return program.path
}

// removeProgram removes the program built, if any.
func removeProgram() error {
	if program.dir == "" {
		return nil
	}
	return os.RemoveAll(program.dir)
}

// replica is a replica process of the shop serving its HTTP API.
type replica struct {
	exe, name, addr string
	args            []string
	*child
}

// startReplica starts the program at exe as a replica listening on addr,
// and waits until it listens.
func startReplica(t *testing.T, exe, name, addr string, args ...string) *replica {
	t.Helper()
	r := &replica{exe: exe, name: name, addr: addr, args: args}
	r.child = startProcess(t, exe, os.Environ(), append([]string{"-listen", addr}, args...)...)
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() }) // a no-op once it exited
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-r.lines:
			require.True(t, ok, "replica %s ended before listening:\n%s", name, r.stderr)
			if strings.HasPrefix(line, "listening on ") {
				return r
			}
		case <-timeout:
			t.Fatalf("replica %s not listening after 30 s:\n%s", name, r.stderr)
		}
	}
}

// restart starts the replica again, on its address.
func (r *replica) restart(t *testing.T) *replica {
	t.Helper()
	return startReplica(t, r.exe, r.name, r.addr, r.args...)
}

// startReplicas starts n replicas of the program at exe, each on a port of
// its own, with the arguments args(i); it returns them and their base
// URLs.
func startReplicas(t *testing.T, exe string, n int, args func(i int) (name string, args []string)) ([]*replica, []string) {
	t.Helper()
	replicas := make([]*replica, n)
	urls := make([]string, n)
	for i := range replicas {
		port, err := freePort()
		require.NoError(t, err)
		name, a := args(i)
		replicas[i] = startReplica(t, exe, name, fmt.Sprintf("127.0.0.1:%d", port), a...)
		urls[i] = "http://" + replicas[i].addr
	}
	return replicas, urls
}

// startCustomers starts the customers of the shop on the replicas at urls:
// 20 000 orders over 10 s, a third paid before their deadline.
func startCustomers(t *testing.T, urls []string, seed uint64) *child {
	t.Helper()
	c := startProcess(t, programPath(t), os.Environ(), "-customers", strings.Join(urls, ","),
		"-orders", strconv.Itoa(killOrders), "-place-over", killPlaceOver.String(), "-pay", "0.3333",
		"-pay-by", (killPayWithin * 8 / 10).String(), "-seed", strconv.FormatUint(seed, 10), "-events")
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	return c
}

// stop ends the replica with SIGTERM, as a deploy does, and checks that it
// exited cleanly.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	var out []string
	require.NoError(t, r.wait(&out), "replica %s:\n%s\n%s", r.name, strings.Join(out, "\n"), r.stderr)
}

// TestKilledReplicaLosesNothing runs three replica processes of the shop on
// one PostgreSQL database and a process of customers, who place 20 000
// orders over 10 s through a load balancer and pay a third of them before
// their deadline. It SIGKILLs one replica mid-run and starts it again a
// few seconds later. Then every unpaid order is cancelled exactly once, no
// paid one at all, each within three ticks of its deadline, or within the
// lease plus three ticks for the orders the killed replica held; and every
// payment acknowledged is kept. It runs -kill-rounds rounds, each on a new
// database.
func TestKilledReplicaLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four processes for about 16 s of real time a round")
	}
	programPath(t)
	for round := range *killRounds {
		url := postgresURL(t)
		if !t.Run(fmt.Sprintf("round%d", round+1), func(t *testing.T) { killRound(t, url, uint64(round+1)) }) {
			return
		}
	}
}

func killRound(t *testing.T, url string, seed uint64) {
	replicas, urls := startReplicas(t, programPath(t), killReplicas, func(i int) (string, []string) {
		name := fmt.Sprintf("r%d", i+1)
		return name, []string{"-db", url, "-replica", name, "-pay-within", killPayWithin.String(),
			"-window", killWindow.String(), "-lease", killLease.String(), "-tick", killTick.String()}
	})
	customers := startCustomers(t, urls, seed)

	// The victim is killed once 8 000 orders are placed (about 4 s in) and
	// it holds orders due within a second, and started again 3.5 s later,
	// on the same address. Down longer than the lease plus two ticks, it
	// leaves the others to take over the orders it held that fall due
	// early in that time (they would be late otherwise); those due later
	// it may take up itself when it comes back.
	check := openPG(t, url, "test")
	victim := replicas[1]
	var events []string
	for placed := 0; placed < 8000; {
		line, ok := <-customers.lines
		require.True(t, ok, "the customers ended before the kill:\n%s", customers.stderr)
		events = append(events, line)
		if strings.HasPrefix(line, "placed ") {
			placed++
		}
	}
	waitHolding(t, check, victim.name, time.Second)
	require.NoError(t, victim.cmd.Process.Kill())
	require.ErrorContains(t, victim.wait(new([]string)), "killed")
	held := heldAtDeath(t, check, victim.name)
	time.Sleep(killDown) // real time is the subject: the leases run out meanwhile
	replicas[1] = victim.restart(t)

	require.NoError(t, customers.wait(&events), "customers:\n%s", customers.stderr)
	settled := waitNoPending(t, check, 10*time.Second)
	for _, r := range replicas {
		r.stop(t)
	}
	require.True(t, settled, "orders still pending 10 s after the last deadline")
	heldBy := checkReplicated(t, check, events, held)
	assert.Positive(t, heldBy["r1"]+heldBy["r3"], "the others took over orders the victim held")
}

// waitHolding polls until the replica holds pending orders due within d:
// a claim takes the orders due within a window at once, and the replicas
// take turns at random.
func waitHolding(t *testing.T, s *PGStore, name string, d time.Duration) {
	t.Helper()
	giveUp := time.Now().Add(20 * time.Second)
	for {
		var n int
		require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM orders
			WHERE status = 'pending' AND claimed_by = $1 AND deadline < now() + $2::int8 * interval '1 microsecond'`,
			name, μs(d)).Scan(&n))
		if n > 0 {
			return
		}
		require.True(t, time.Now().Before(giveUp), "%s held no order due within %v for 20 s", name, d)
		time.Sleep(20 * time.Millisecond) // the database's state: nothing to wait on but a poll
	}
}

// heldAtDeath waits until the server has ended every connection of the
// killed replica, so that no statement of it is still running, and
// returns the pending orders it holds.
func heldAtDeath(t *testing.T, s *PGStore, name string) map[int64]bool {
	t.Helper()
	giveUp := time.Now().Add(10 * time.Second)
	for {
		var n int
		require.NoError(t, s.pool.QueryRow(t.Context(),
			`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, "delayedorder "+name).Scan(&n))
		if n == 0 {
			break
		}
		require.True(t, time.Now().Before(giveUp), "the killed replica's connections still open after 10 s")
		time.Sleep(5 * time.Millisecond) // the server's state: nothing to wait on but a poll
	}
	rows, err := s.pool.Query(t.Context(), `SELECT id FROM orders WHERE status = 'pending' AND claimed_by = $1`, name)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	held := map[int64]bool{}
	for _, id := range ids {
		held[id] = true
	}
	return held
}

// waitNoPending polls until no order is pending, or until the time given
// after the last deadline; it reports whether none is.
func waitNoPending(t *testing.T, s *PGStore, within time.Duration) bool {
	t.Helper()
	var giveUp time.Time
	for {
		n, last, err := s.Unsettled(t.Context())
		require.NoError(t, err)
		if n == 0 {
			return true
		}
		if giveUp.IsZero() {
			giveUp = time.Now().Add(last + within)
		}
		if time.Now().After(giveUp) {
			return false
		}
		time.Sleep(50 * time.Millisecond) // the database's state: nothing to wait on but a poll
	}
}

// pgRow is an order as the test reads it, on its own.
type pgRow struct {
	status        Status
	late          time.Duration // first cancellation's time after the deadline
	cancellations int
	by            string // the replica that cancelled it
}

// checkReplicated reads the database and checks it against the events
// the customers printed: what the replicas acknowledged to them.
// It returns who cancelled the orders the victim held.
func checkReplicated(t *testing.T, s *PGStore, events []string, held map[int64]bool) (heldBy map[string]int) {
	t.Helper()
	heldBy = map[string]int{}
	rows, err := s.pool.Query(t.Context(), `
		SELECT o.id, o.status, count(c.order_id), coalesce(min(c.cancelled_at) - o.deadline, '0'), coalesce(min(c.cancelled_by), '')
		FROM orders o LEFT JOIN cancellations c ON c.order_id = o.id GROUP BY o.id`)
	require.NoError(t, err)
	orders := map[int64]pgRow{}
	for rows.Next() {
		var (
			id int64
			r  pgRow
		)
		require.NoError(t, rows.Scan(&id, &r.status, &r.cancellations, &r.late, &r.by))
		orders[id] = r
	}
	require.NoError(t, rows.Err())

	var (
		late, lateHeld []time.Duration
		byReplica      = map[string]int{}
		counts         = map[Status]int{}
		broken         = map[string][]int64{} // the orders that break each rule
	)
	breaks := func(rule string, id int64) { broken[rule] = append(broken[rule], id) }
	for id, r := range orders {
		counts[r.status]++
		switch {
		case r.status == Paid && r.cancellations > 0:
			breaks("paid and cancelled", id)
		case r.status == Paid:
		case r.status != Cancelled:
			breaks("left "+string(r.status), id)
		case r.cancellations != 1:
			breaks("cancelled more than once", id)
		case r.late < 0:
			breaks("cancelled before the deadline", id)
		case held[id]:
			byReplica[r.by]++
			heldBy[r.by]++
			lateHeld = append(lateHeld, r.late)
			if r.late > killLease+3*killTick {
				breaks("held by the killed replica, cancelled later than the lease + 3 ticks", id)
			}
		default:
			byReplica[r.by]++
			late = append(late, r.late)
			if r.late > 3*killTick {
				breaks("cancelled later than 3 ticks", id)
			}
		}
	}
	acked := map[string]int{}
	for _, line := range events {
		m := eventLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		acked[m[1]]++
		id, err := strconv.ParseInt(m[2], 10, 64)
		require.NoError(t, err)
		switch o, ok := orders[id]; {
		case !ok:
			breaks("acknowledged, not in the database", id)
		case m[1] == "paid" && o.status != Paid:
			breaks("acknowledged paid, not paid", id)
		case m[1] == "refused" && o.status != Cancelled:
			breaks("payment refused, not cancelled", id)
		}
	}
	for rule, ids := range broken {
		t.Errorf("%d orders %s, such as %v", len(ids), rule, ids[:min(len(ids), 5)])
	}
	assert.Equal(t, killOrders, acked["placed"], "every order placed")
	// A request the victim took as it was killed may have made an order
	// before the load balancer sent it again: one per customer at work.
	assert.GreaterOrEqual(t, len(orders), killOrders)
	assert.LessOrEqual(t, len(orders), killOrders+64)
	assert.InDelta(t, killOrders/3, acked["paid"], killOrders/20, "a third paid")
	t.Logf("made %d (acknowledged %d), paid %d (refused %d), cancelled %d, by %v",
		len(orders), acked["placed"], counts[Paid], acked["refused"], counts[Cancelled], byReplica)
	t.Logf("lateness, orders the killed replica held (%d, %d cancelled, by %v): %s", len(held), len(lateHeld), heldBy, quantiles(lateHeld))
	t.Logf("lateness, the others: %s", quantiles(late))
	return heldBy
}

// quantiles describes latenesses: p50, p99, max.
func quantiles(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	slices.Sort(d)
	q := func(p float64) time.Duration {
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(time.Millisecond / 10)
	}
	return fmt.Sprintf("p50 %v, p99 %v, max %v", q(0.50), q(0.99), d[len(d)-1].Round(time.Millisecond/10))
}
