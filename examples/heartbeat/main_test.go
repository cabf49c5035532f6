package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind. The ants
// package starts a default pool of its own when it is imported; its two
// goroutines are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
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
	if err := r.check(); err != nil {
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
	// Each live connection beats from the start to the end of the run: at
	// least once per idle timeout, and every message re-armed a timeout.
	if min := int64(cfg.Conns) + 30*int64(cfg.Duration/cfg.Idle); r.Messages < min {
		t.Errorf("server received %d messages, want at least %d", r.Messages, min)
	}
	s := r.Stats
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
	} {
		if r.check() == nil {
			t.Errorf("check accepted %+v", r)
		}
	}
	if err := (&report{Quiet: 2, QuietClosed: 2, IdleClosed: 2}).check(); err != nil {
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
