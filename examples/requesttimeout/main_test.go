package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// newTestServer serves a server with the given deadline through httptest;
// the server and the timer are stopped when the test ends, in that order.
func newTestServer(t *testing.T, timeout time.Duration) (*server, *httptest.Server) {
	t.Helper()
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(5 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { timer.Stop() })
	srv := newServer(timer, timeout)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts
}

// TestHandlerDeadline sends fast and slow requests at once: the fast ones
// are answered, the slow ones get a 504 at their deadline, never before and
// long before their work would end, and the backend sees the deadline.
func TestHandlerDeadline(t *testing.T) {
	const (
		timeout  = 300 * time.Millisecond
		slowWork = 10 * time.Second
		slack    = 3 * time.Second // how late a 504 may come on a loaded machine
	)
	srv, ts := newTestServer(t, timeout)
	client := ts.Client()

	type result struct {
		id   int
		slow bool
		rep  reply
		err  error
	}
	const fast, slow = 20, 5
	results := make(chan result, fast+slow)
	var wg sync.WaitGroup
	for id := range fast + slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := time.Duration(id%5) * time.Millisecond
			if id >= fast {
				work = slowWork
			}
			rep, err := get(context.Background(), client, ts.URL, id, work)
			results <- result{id, id >= fast, rep, err}
		}()
	}
	wg.Wait()
	close(results)

	for res := range results {
		if res.err != nil {
			t.Errorf("request %d: %v", res.id, res.err)
			continue
		}
		rep := res.rep
		if res.slow {
			if rep.status != http.StatusGatewayTimeout {
				t.Errorf("slow request %d: status %d, want 504", res.id, rep.status)
			}
			if rep.took < timeout || rep.took > timeout+slack {
				t.Errorf("slow request %d answered after %v, want %v to %v", res.id, rep.took, timeout, timeout+slack)
			}
		} else if rep.status != http.StatusOK || rep.value != res.id*res.id {
			t.Errorf("fast request %d: status %d, value %d; want 200, %d", res.id, rep.status, rep.value, res.id*res.id)
		}
		// The deadline is the timeout after the request arrived, which is
		// after it was sent and before its answer: the backend, called at
		// once, had at most the timeout left, and at least the timeout less
		// the round trip.
		if rep.budget > timeout || rep.budget < timeout-rep.took {
			t.Errorf("request %d took %v; the backend had %v left of %v", res.id, rep.took, rep.budget, timeout)
		}
	}
	if s, to, g := srv.served.Load(), srv.timedOut.Load(), srv.gone.Load(); s != fast || to != slow || g != 0 {
		t.Errorf("server answered %d with 200, %d with 504, lost %d clients; want %d, %d, 0", s, to, g, fast, slow)
	}
}

// TestHandlerClientGone cancels a request while its backend call runs: the
// handler's context ends with the client's, before the deadline, and the
// handler does not answer 504.
func TestHandlerClientGone(t *testing.T) {
	srv, ts := newTestServer(t, time.Hour)
	called := make(chan struct{})
	type outcome struct {
		err  error
		took time.Duration
	}
	returned := make(chan outcome, 1)
	srv.backend = func(ctx context.Context, id int, work time.Duration) (int, time.Duration, error) {
		close(called)
		start := time.Now()
		v, budget, err := callBackend(ctx, id, work)
		returned <- outcome{err, time.Since(start)}
		return v, budget, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := make(chan error, 1)
	go func() {
		// Work that outlasts the guard below, but ends: a handler that
		// missed the cancellation still returns, and ts.Close with it.
		_, err := get(ctx, ts.Client(), ts.URL, 1, 15*time.Second)
		sent <- err
	}()
	<-called
	cancel()
	if err := <-sent; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v, want context.Canceled", err)
	}
	select {
	case o := <-returned:
		if !errors.Is(o.err, context.Canceled) {
			t.Errorf("backend: %v, want context.Canceled", o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend call did not end when the client went away")
	}
	ts.Close() // waits for the handler
	if s, to, g := srv.served.Load(), srv.timedOut.Load(), srv.gone.Load(); s != 0 || to != 0 || g != 1 {
		t.Errorf("server answered %d with 200, %d with 504, lost %d clients; want 0, 0, 1", s, to, g)
	}
}

func TestHandlerBadRequest(t *testing.T) {
	_, ts := newTestServer(t, time.Second)
	for _, q := range []string{"", "?id=x&work=1ms", "?id=1", "?id=1&work=soon", "?id=1&work=-1ms"} {
		resp, err := ts.Client().Get(ts.URL + "/" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /%s: status %d, want 400", q, resp.StatusCode)
		}
	}
}

func TestRequestTimeoutRun(t *testing.T) {
	cfg := defaultConfig()
	cfg.Requests = 150
	cfg.Clients = 8
	cfg.Timeout = 300 * time.Millisecond
	cfg.Work = 5 * time.Millisecond
	cfg.SlowFrac = 0.15
	cfg.SlowWork = 10 * time.Second // far past the deadline: these always time out
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
	if r.OK != cfg.Requests-r.Slow {
		t.Fatalf("%d requests answered 200, want every one of the %d fast ones", r.OK, cfg.Requests-r.Slow)
	}
	// A slow request is cut off at its deadline, not after its work.
	if r.Elapsed >= cfg.SlowWork {
		t.Errorf("run took %v: slow requests were not cut off at their deadline", r.Elapsed)
	}
	if s := r.Stats; s.Scheduled != s.Cancelled+s.Expired {
		t.Errorf("timer stats %+v: every request timeout was cancelled or expired", s)
	}

	var out bytes.Buffer
	r.print(&out, cfg)
	for _, want := range []string{"200 OK:", "504 Gateway Timeout:", "the backend saw the deadline", "ok: every request answered"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRequestTimeoutCheckCatchesFailures(t *testing.T) {
	cfg := defaultConfig()
	good := report{Requests: 3, OK: 2, TimedOut: 1, Served: 2, ServerTimedOut: 1, Slow: 1, SlowTimedOut: 1,
		TimeoutAfter: []time.Duration{cfg.Timeout}, Budgets: []time.Duration{cfg.Timeout, time.Millisecond}}
	if err := good.check(cfg); err != nil {
		t.Fatalf("check rejected a good report: %v", err)
	}
	for _, mod := range []func(*report){
		func(r *report) { r.OK = 1 },
		func(r *report) { r.Errors = 1 },
		func(r *report) { r.SlowTimedOut = 0 },
		func(r *report) { r.TimeoutAfter = []time.Duration{cfg.Timeout - time.Millisecond} },
		func(r *report) { r.Budgets = []time.Duration{0} },
		func(r *report) { r.Budgets = []time.Duration{cfg.Timeout + 1} },
		func(r *report) { r.ServerTimedOut = 0 },
		func(r *report) { r.Gone = 1 },
		func(r *report) { r.Leftover = 1 },
	} {
		r := good
		mod(&r)
		if r.check(cfg) == nil {
			t.Errorf("check accepted %+v", r)
		}
	}
}

func TestRequestTimeoutInvalidConfig(t *testing.T) {
	cfg := defaultConfig()
	cfg.Timeout = 0
	if _, err := run(context.Background(), cfg); err == nil {
		t.Error("run accepted -timeout 0")
	}
}
