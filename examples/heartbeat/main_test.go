package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func TestHeartbeat(t *testing.T) {
	cfg := config{
		Addr:     "127.0.0.1:0",
		Conns:    60,
		Quiet:    0.5,
		Idle:     500 * time.Millisecond,
		Interval: 25 * time.Millisecond, // 20 heartbeats per idle timeout: a wide margin under -race
		Duration: 700 * time.Millisecond,
		Tick:     5 * time.Millisecond,
	}
	start := time.Now()
	r, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.check(cfg.Idle); err != nil {
		t.Fatal(err)
	}
	if r.Quiet != 30 || r.Alive != 30 || r.QuietClosed != 30 || r.AliveClosed != 0 || r.IdleClosed != 30 {
		t.Fatalf("report %+v: want 30 quiet connections closed, 30 live ones not", r)
	}
	if len(r.Lateness) != 30 {
		t.Fatalf("%d lateness samples, want 30", len(r.Lateness))
	}
	for _, l := range r.Lateness {
		if l < 0 {
			t.Fatalf("a connection was closed %v before its idle timeout", -l)
		}
	}
	// As the client saw it: each quiet connection was closed after the idle
	// timeout, never before, and within a bound a loaded machine meets.
	if len(r.QuietAfter) != 30 {
		t.Fatalf("%d quiet connections timed by the client, want 30", len(r.QuietAfter))
	}
	for _, d := range r.QuietAfter {
		if d < cfg.Idle || d > cfg.Idle+3*time.Second {
			t.Errorf("a quiet connection was closed %v after its message, want %v to %v", d, cfg.Idle, cfg.Idle+3*time.Second)
		}
	}
	// Each live connection beats from the start to the end of the run: at
	// least once per idle timeout, and every message moved a deadline, but
	// one that found its connection already timed out.
	if min := int64(cfg.Conns) + 30*int64(cfg.Duration/cfg.Idle); r.Messages < min {
		t.Errorf("server received %d messages, want at least %d", r.Messages, min)
	}
	if moved := r.Resets + r.Renewed; moved > r.Messages || r.Messages-moved > int64(r.IdleClosed) {
		t.Errorf("%d messages moved %d deadlines with Reset and replaced %d timeouts", r.Messages, r.Resets, r.Renewed)
	}
	// A connection holds one timeout for its life; only a timeout Reset did
	// not move is replaced by a new one.
	s := r.Stats
	if s.Scheduled != uint64(cfg.Conns)+uint64(r.Renewed) {
		t.Errorf("timer stats %+v: want %d timeouts scheduled, one per connection and %d replacements", s, cfg.Conns, r.Renewed)
	}
	if s.Scheduled != s.Expired+s.Cancelled+s.ReturnedByStop || s.Expired != 30 || s.ReturnedByStop != 0 {
		t.Errorf("timer stats %+v: want 30 expired, the rest cancelled", s)
	}
	// The quiet connections were closed after about one idle timeout, not at
	// the end of the client's give-up period.
	if elapsed := time.Since(start); elapsed > 8*time.Second {
		t.Errorf("run took %v", elapsed)
	}

	var out bytes.Buffer
	r.print(&out, cfg)
	for _, want := range []string{"30 closed by the server", "0 closed by the server", "ok: exactly the quiet connections were closed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestHeartbeatCheckCatchesFailures(t *testing.T) {
	for _, r := range []report{
		{Quiet: 2, QuietClosed: 1, IdleClosed: 2},
		{Quiet: 2, QuietClosed: 2, IdleClosed: 2, AliveClosed: 1},
		{Quiet: 2, QuietClosed: 2, IdleClosed: 2, Lateness: []time.Duration{time.Millisecond, -time.Millisecond}},
		{Quiet: 2, QuietClosed: 2, IdleClosed: 2, Leftover: 1},
		{Quiet: 2, QuietClosed: 2, IdleClosed: 2, QuietAfter: []time.Duration{time.Second, time.Second - 1}},
	} {
		if r.check(time.Second) == nil {
			t.Errorf("check accepted %+v", r)
		}
	}
	if err := (&report{Quiet: 2, QuietClosed: 2, IdleClosed: 2, QuietAfter: []time.Duration{time.Second}}).check(time.Second); err != nil {
		t.Errorf("check rejected a good report: %v", err)
	}
}

func TestHeartbeatInvalidConfig(t *testing.T) {
	cfg := defaultConfig()
	cfg.Quiet = 2
	if _, err := run(context.Background(), cfg); err == nil {
		t.Error("run accepted -quiet 2")
	}
}

// TestHeartbeatQuietAfterBeating beats on one connection for three idle
// timeouts, then falls silent: the connection stays open while it beats and
// is closed one idle timeout after its last message, not after its first.
func TestHeartbeatQuietAfterBeating(t *testing.T) {
	const (
		idle     = 200 * time.Millisecond
		interval = 20 * time.Millisecond // 10 heartbeats per idle timeout
		slack    = 3 * time.Second       // how late the close may come on a loaded machine
	)
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(5 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(ln, timer, idle)
	go srv.serve()
	defer srv.shutdown()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server never writes: a read returns when it closes the connection.
	closed := make(chan time.Time, 1)
	go func() {
		c.Read(make([]byte, 1))
		closed <- time.Now()
	}()

	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	start := time.Now()
	var last time.Time // before the last write: the server cannot see it earlier
	for time.Since(start) < 3*idle {
		last = time.Now()
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			t.Fatalf("write after %v: %v", time.Since(start), err)
		}
		select {
		case at := <-closed:
			t.Fatalf("the server closed a beating connection %v after it opened", at.Sub(start))
		case <-ticker.C:
		}
	}
	select {
	case at := <-closed:
		if d := at.Sub(last); d < idle || d > idle+slack {
			t.Errorf("closed %v after the last message, want %v to %v", d, idle, idle+slack)
		}
	case <-time.After(idle + 2*slack):
		t.Fatal("the server did not close the silent connection")
	}
	if n := srv.messages.Load(); n < int64(3*idle/interval)/2 {
		t.Errorf("server received %d messages", n)
	}
	if got := srv.idleClosed.Load(); got != 1 {
		t.Errorf("%d idle closes, want 1", got)
	}
}
