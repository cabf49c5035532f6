// Command requesttimeout shows per-request deadlines in an HTTP server, the
// job a hashed wheel timer is built for: very many timeouts, almost all
// cancelled.
//
// The handler gives each request a context from
//
//	ctx, cancel := timer.WithTimeout(r.Context(), timeout)
//
// and passes it down to its work, a call to a simulated backend that takes
// as long as the request asks (?work=) and gives up when ctx is done. The
// handler answers 200 with the backend's result, or 504 Gateway Timeout
// when ctx.Err() is context.DeadlineExceeded. The backend reads
// ctx.Deadline() and reports the time it had left, as a client passes its
// deadline on to the next service. The context behaves as
// context.WithTimeout's, except that Done closes at the first tick of the
// wheel after the deadline, never before; a server holding very many
// requests in flight pays a wheel timeout for each instead of a runtime
// timer.
//
// The program serves on 127.0.0.1, sends -requests requests from -clients
// concurrent clients, a fraction -slow of them asking for more work than
// the deadline allows, and reports what the clients saw: every slow request
// cut off with a 504 at its deadline, never before, the others answered.
//
//	go run ./examples/requesttimeout [-requests 2000] [-clients 32] [-timeout 100ms] [-slow 0.1]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// budgetHeader carries the time the backend had left before the request's
// deadline when the handler called it.
const budgetHeader = "X-Time-Budget"

type config struct {
	Addr     string
	Requests int
	Clients  int           // concurrent clients, each sending one request at a time
	Timeout  time.Duration // the deadline of each request, from its arrival
	Work     time.Duration // a normal request asks for up to this much work
	SlowFrac float64       // the fraction of requests that ask for SlowWork
	SlowWork time.Duration
	Tick     time.Duration
	Seed     uint64
}

func defaultConfig() config {
	return config{
		Addr:     "127.0.0.1:0",
		Requests: 2000,
		Clients:  32,
		Timeout:  100 * time.Millisecond,
		Work:     10 * time.Millisecond,
		SlowFrac: 0.1,
		SlowWork: 300 * time.Millisecond,
		Tick:     5 * time.Millisecond,
		Seed:     1,
	}
}

func main() {
	cfg := defaultConfig()
	flag.StringVar(&cfg.Addr, "addr", cfg.Addr, "address the server listens on")
	flag.IntVar(&cfg.Requests, "requests", cfg.Requests, "requests to send")
	flag.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients")
	flag.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "deadline of each request")
	flag.DurationVar(&cfg.Work, "work", cfg.Work, "longest work of a normal request")
	flag.Float64Var(&cfg.SlowFrac, "slow", cfg.SlowFrac, "fraction of requests whose work takes -slow-work")
	flag.DurationVar(&cfg.SlowWork, "slow-work", cfg.SlowWork, "work of a slow request")
	flag.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick duration of the timer")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "requesttimeout:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, cfg)
	if err := r.check(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "requesttimeout:", err)
		os.Exit(1)
	}
}

// backend is the handler's work: a call to a dependency that needs work to
// answer request id. It gives up when ctx is done, and reports the time it
// had left before ctx's deadline, which a real client would send on
// (gRPC's grpc-timeout header).
type backend func(ctx context.Context, id int, work time.Duration) (value int, budget time.Duration, err error)

func callBackend(ctx context.Context, id int, work time.Duration) (int, time.Duration, error) {
	var budget time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		budget = time.Until(deadline)
	}
	t := time.NewTimer(work)
	defer t.Stop()
	select {
	case <-t.C:
		return id * id, budget, nil
	case <-ctx.Done():
		return 0, budget, ctx.Err()
	}
}

// server answers GET /?id=N&work=D with N², after D of backend work, or
// with 504 if the work takes longer than the deadline.
type server struct {
	timer   *hashedwheel.HashedWheelTimer
	timeout time.Duration
	backend backend

	served   atomic.Int64 // answered 200
	timedOut atomic.Int64 // answered 504
	gone     atomic.Int64 // the client went away first: no answer
}

func newServer(timer *hashedwheel.HashedWheelTimer, timeout time.Duration) *server {
	return &server{timer: timer, timeout: timeout, backend: callBackend}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, err := strconv.Atoi(q.Get("id"))
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	work, err := time.ParseDuration(q.Get("work"))
	if err != nil || work < 0 {
		http.Error(w, "bad work", http.StatusBadRequest)
		return
	}
	// The deadline counts from the request's arrival. Cancelling the
	// context when the handler returns releases its wheel timeout.
	ctx, cancel := s.timer.WithTimeout(r.Context(), s.timeout)
	defer cancel()

	value, budget, err := s.backend(ctx, id, work)
	w.Header().Set(budgetHeader, budget.String())
	switch {
	case err == nil:
		s.served.Add(1)
		fmt.Fprintln(w, value)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.timedOut.Add(1)
		http.Error(w, "deadline exceeded", http.StatusGatewayTimeout)
	default: // the client went away (r.Context() was cancelled): no one reads an answer
		s.gone.Add(1)
	}
}

// reply is what a client got for one request.
type reply struct {
	status int
	value  int
	budget time.Duration // the backend's time left, from budgetHeader
	took   time.Duration // from before sending to the end of the body
}

// get sends request id asking for work and reads the answer.
func get(ctx context.Context, client *http.Client, base string, id int, work time.Duration) (reply, error) {
	url := fmt.Sprintf("%s/?id=%d&work=%s", base, id, work)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return reply{}, err
	}
	sent := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	rep := reply{status: resp.StatusCode, took: time.Since(sent)}
	if rep.budget, err = time.ParseDuration(resp.Header.Get(budgetHeader)); err != nil {
		return rep, fmt.Errorf("%s: %s: %w", url, budgetHeader, err)
	}
	if rep.status == http.StatusOK {
		if rep.value, err = strconv.Atoi(strings.TrimSpace(string(body))); err != nil {
			return rep, fmt.Errorf("%s: body %q: %w", url, body, err)
		}
	}
	return rep, nil
}

// report is what the clients and the server saw.
type report struct {
	Addr           string
	Requests, Slow int
	OK, TimedOut   int // answers 200 with the right value, and 504
	SlowTimedOut   int
	Errors         int             // anything else
	OKLatency      []time.Duration // of the 200 answers
	TimeoutAfter   []time.Duration // of the 504 answers
	Budgets        []time.Duration // the backend's time left, of every answer
	Elapsed        time.Duration

	// Seen by the server.
	Served, ServerTimedOut, Gone int64
	Leftover                     int // timeouts Stop returned
	Stats                        hashedwheel.Stats
}

// check reports what went wrong, if anything.
func (r *report) check(cfg config) error {
	var errs []error
	if r.OK+r.TimedOut != r.Requests || r.Errors != 0 {
		errs = append(errs, fmt.Errorf("%d answers 200 + %d answers 504 + %d errors != %d requests", r.OK, r.TimedOut, r.Errors, r.Requests))
	}
	if cfg.SlowWork > cfg.Timeout && r.SlowTimedOut != r.Slow {
		errs = append(errs, fmt.Errorf("only %d of %d slow requests timed out", r.SlowTimedOut, r.Slow))
	}
	if len(r.TimeoutAfter) > 0 && slices.Min(r.TimeoutAfter) < cfg.Timeout {
		errs = append(errs, fmt.Errorf("a request was answered 504 after %v, before its deadline %v", slices.Min(r.TimeoutAfter), cfg.Timeout))
	}
	if len(r.Budgets) > 0 && (slices.Min(r.Budgets) <= 0 || slices.Max(r.Budgets) > cfg.Timeout) {
		errs = append(errs, fmt.Errorf("the backend had %v to %v left, want more than 0 and at most the deadline %v",
			slices.Min(r.Budgets), slices.Max(r.Budgets), cfg.Timeout))
	}
	if r.Served != int64(r.OK) || r.ServerTimedOut != int64(r.TimedOut) || r.Gone != 0 {
		errs = append(errs, fmt.Errorf("server counts %d answered 200, %d answered 504, %d clients gone; clients saw %d and %d",
			r.Served, r.ServerTimedOut, r.Gone, r.OK, r.TimedOut))
	}
	if r.Leftover != 0 {
		errs = append(errs, fmt.Errorf("%d request timeouts were still pending at the end", r.Leftover))
	}
	return errors.Join(errs...)
}

func (r *report) print(w io.Writer, cfg config) {
	fmt.Fprintf(w, "server on %s gives each request %v (timer.WithTimeout, tick %v)\n", r.Addr, cfg.Timeout, cfg.Tick)
	fmt.Fprintf(w, "%d requests from %d clients in %v; %d slow ones ask for %v of work\n",
		r.Requests, cfg.Clients, r.Elapsed.Round(time.Millisecond), r.Slow, cfg.SlowWork)
	fmt.Fprintf(w, "  200 OK:              %5d   latency %s\n", r.OK, percentiles(r.OKLatency))
	fmt.Fprintf(w, "  504 Gateway Timeout: %5d   after   %s\n", r.TimedOut, percentiles(r.TimeoutAfter))
	fmt.Fprintf(w, "    slow requests cut off at the deadline: %d of %d; other requests cut off: %d\n",
		r.SlowTimedOut, r.Slow, r.TimedOut-r.SlowTimedOut)
	if len(r.Budgets) > 0 {
		fmt.Fprintf(w, "  the backend saw the deadline, with %v to %v left when called\n",
			slices.Min(r.Budgets).Round(100*time.Microsecond), slices.Max(r.Budgets).Round(100*time.Microsecond))
	}
	s := r.Stats
	fmt.Fprintf(w, "timer: %d timeouts scheduled, %d cancelled as their handler returned, %d expired into a 504\n",
		s.Scheduled, s.Cancelled, s.Expired)
	if err := r.check(cfg); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
	} else {
		fmt.Fprintln(w, "ok: every request answered, every slow one with a 504 at its deadline, none before")
	}
}

func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(ds))
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	return fmt.Sprintf("min %v  p50 %v  p99 %v  max %v", r(s[0]), r(s[len(s)/2]), r(s[len(s)*99/100]), r(s[len(s)-1]))
}

// run serves HTTP on cfg.Addr, lets the clients send every request and read
// its answer, shuts the server down and returns the counts.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Requests < 1 || cfg.Clients < 1 || cfg.Timeout <= 0 || cfg.Work < 0 || cfg.SlowWork < 0 ||
		cfg.SlowFrac < 0 || cfg.SlowFrac > 1 {
		return nil, fmt.Errorf("invalid configuration %+v", cfg)
	}
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick))
	if err != nil {
		return nil, err
	}
	defer timer.Stop()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	srv := newServer(timer, cfg.Timeout)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)

	r := &report{Addr: ln.Addr().String(), Requests: cfg.Requests}
	load(ctx, cfg, "http://"+r.Addr, r)

	// Every answer has been read, so every handler has returned, or, if
	// ctx ended, is returning now that its client went away.
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		hs.Close()
		return r, err
	}
	r.Served, r.ServerTimedOut, r.Gone = srv.served.Load(), srv.timedOut.Load(), srv.gone.Load()
	r.Leftover = len(timer.Stop())
	r.Stats = timer.Stats()
	return r, ctx.Err()
}

// load sends cfg.Requests requests to base from cfg.Clients clients and
// counts in r what they got.
func load(ctx context.Context, cfg config, base string, r *report) {
	// The work of each request, decided up front from the seed.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	work := make([]time.Duration, cfg.Requests)
	slow := make([]bool, cfg.Requests)
	for i := range work {
		if rng.Float64() < cfg.SlowFrac {
			work[i], slow[i] = cfg.SlowWork, true
			r.Slow++
		} else if cfg.Work > 0 {
			work[i] = time.Duration(rng.Int64N(int64(cfg.Work)))
		}
	}

	transport := &http.Transport{MaxIdleConnsPerHost: cfg.Clients}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < cfg.Requests && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				rep, err := get(ctx, client, base, i, work[i])
				mu.Lock()
				switch {
				case err != nil:
					r.Errors++
				case rep.status == http.StatusOK && rep.value == i*i:
					r.OK++
					r.OKLatency = append(r.OKLatency, rep.took)
					r.Budgets = append(r.Budgets, rep.budget)
				case rep.status == http.StatusGatewayTimeout:
					r.TimedOut++
					r.TimeoutAfter = append(r.TimeoutAfter, rep.took)
					r.Budgets = append(r.Budgets, rep.budget)
					if slow[i] {
						r.SlowTimedOut++
					}
				default:
					r.Errors++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.Elapsed = time.Since(start)
}
