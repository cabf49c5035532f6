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

func TestRequestTimeout(t *testing.T) {
	cfg := defaultConfig()
	cfg.Requests = 120
	cfg.Workers = 4
	cfg.Clients = 8
	cfg.Deadline = 100 * time.Millisecond
	cfg.Work = 5 * time.Millisecond
	cfg.SlowFrac = 0.15
	cfg.SlowWork = time.Second // far past the deadline: these always time out
	r, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.check(cfg); err != nil {
		t.Fatal(err)
	}
	if r.Slow == 0 || r.SlowTimedOut != r.Slow {
		t.Fatalf("%d of %d slow requests timed out, want all", r.SlowTimedOut, r.Slow)
	}
	if r.OK == 0 {
		t.Fatal("no request was answered with a result")
	}
	// A slow request is abandoned at its deadline, not after its work: the
	// run takes far less than the slow requests' work added up.
	if serial := time.Duration(r.Slow) * cfg.SlowWork / time.Duration(cfg.Workers); r.Elapsed >= serial {
		t.Errorf("run took %v: slow requests were not abandoned at their deadline", r.Elapsed)
	}
	s := r.Stats
	if s.Scheduled != uint64(cfg.Requests) || s.Cancelled != uint64(r.OK) || s.Expired != uint64(r.TimedOut) {
		t.Errorf("timer stats %+v: want %d scheduled, %d cancelled, %d expired", s, cfg.Requests, r.OK, r.TimedOut)
	}

	var out bytes.Buffer
	r.print(&out, cfg)
	for _, want := range []string{"answered with a result:", "answered with a timeout error:", "answered twice: 0", "ok: every request answered exactly once"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRequestTimeoutAllLate queues requests behind one slow worker: most
// expire while waiting and are skipped, still answered exactly once.
func TestRequestTimeoutAllLate(t *testing.T) {
	cfg := defaultConfig()
	cfg.Requests = 40
	cfg.Workers = 1
	cfg.Clients = 40
	cfg.Deadline = 30 * time.Millisecond
	cfg.Work = 0
	cfg.SlowFrac = 1
	cfg.SlowWork = time.Second
	r, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.check(cfg); err != nil {
		t.Fatal(err)
	}
	if r.TimedOut != cfg.Requests || r.Skipped == 0 {
		t.Fatalf("report %+v: want every request timed out, some skipped in the queue", r)
	}
}

func TestRequestTimeoutCheckCatchesFailures(t *testing.T) {
	cfg := defaultConfig()
	good := report{Requests: 3, OK: 2, TimedOut: 1, Served: 2, Abandoned: 1, Slow: 1, SlowTimedOut: 1,
		TimeoutAfter: []time.Duration{cfg.Deadline}}
	if err := good.check(cfg); err != nil {
		t.Fatalf("check rejected a good report: %v", err)
	}
	for _, mod := range []func(*report){
		func(r *report) { r.OK = 1 },
		func(r *report) { r.Duplicates = 1 },
		func(r *report) { r.SlowTimedOut = 0 },
		func(r *report) { r.TimeoutAfter = []time.Duration{cfg.Deadline - time.Millisecond} },
		func(r *report) { r.Abandoned = 0 },
		func(r *report) { r.Leftover = 1 },
	} {
		r := good
		mod(&r)
		if r.check(cfg) == nil {
			t.Errorf("check accepted %+v", r)
		}
	}
}
