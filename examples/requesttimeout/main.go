// Command requesttimeout shows per-request deadlines on a worker pool, the
// job a hashed wheel timer is built for: very many timeouts, almost all
// cancelled.
//
// Clients send requests to a server whose workers take them from a queue.
// Each request gets a timeout of -deadline when it arrives. A worker that
// finishes a request cancels its timeout and, if the cancel succeeded,
// sends the response. If the deadline passes first, the timeout's task
// answers the request with ErrDeadlineExceeded and tells the worker to give
// up; a worker that picks up an already expired request skips it. Cancel is
// the arbiter: it succeeds for exactly one side, so every request is
// answered exactly once, with its result or with the timeout error.
//
// A fraction -slow of the requests take longer than the deadline; the rest
// take up to -work. With more clients than workers, some fast requests also
// time out while they wait in the queue.
//
//	go run ./examples/requesttimeout [-requests 2000] [-workers 8] [-clients 32] [-deadline 100ms]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// ErrDeadlineExceeded is the answer to a request that was not served in
// time.
var ErrDeadlineExceeded = errors.New("request deadline exceeded")

type config struct {
	Requests int
	Workers  int           // the server's worker goroutines
	Clients  int           // concurrent clients, each sending one request at a time
	Deadline time.Duration // per request
	Work     time.Duration // a normal request takes up to this long
	SlowFrac float64       // the fraction of requests that take SlowWork
	SlowWork time.Duration
	Tick     time.Duration
	Seed     uint64
}

func defaultConfig() config {
	return config{
		Requests: 2000,
		Workers:  8,
		Clients:  32,
		Deadline: 100 * time.Millisecond,
		Work:     10 * time.Millisecond,
		SlowFrac: 0.1,
		SlowWork: 300 * time.Millisecond,
		Tick:     5 * time.Millisecond,
		Seed:     1,
	}
}

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.Requests, "requests", cfg.Requests, "requests to send")
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "server worker goroutines")
	flag.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients")
	flag.DurationVar(&cfg.Deadline, "deadline", cfg.Deadline, "deadline of each request")
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

// request is one request on the server, and the TimerTask of its deadline.
type request struct {
	id      int
	work    time.Duration
	timeout hashedwheel.Timeout
	expired chan struct{} // closed when the deadline passes: the worker gives up
	reply   chan response // buffered: one answer, never more

	server *server
}

type response struct {
	value int
	err   error
}

// Run is called by the timer at the deadline: it answers with the timeout
// error, and tells the worker, if any, to stop.
func (r *request) Run(hashedwheel.Timeout) {
	close(r.expired)
	r.answer(response{err: ErrDeadlineExceeded})
}

// answer sends the one answer of the request; a second one would be a bug,
// and is counted.
func (r *request) answer(resp response) {
	select {
	case r.reply <- resp:
	default:
		r.server.duplicates.Add(1)
	}
}

// server runs requests on a fixed pool of workers.
type server struct {
	timer    *hashedwheel.HashedWheelTimer
	deadline time.Duration
	queue    chan *request
	wg       sync.WaitGroup

	served     atomic.Int64 // finished in time and answered
	abandoned  atomic.Int64 // the worker gave up at the deadline
	skipped    atomic.Int64 // expired while queued: never started
	discarded  atomic.Int64 // finished, but the deadline had passed: result dropped
	duplicates atomic.Int64 // second answers: must stay 0
}

func newServer(timer *hashedwheel.HashedWheelTimer, workers int, deadline time.Duration) *server {
	s := &server{timer: timer, deadline: deadline, queue: make(chan *request, 1024)}
	for range workers {
		s.wg.Add(1)
		go s.worker()
	}
	return s
}

// submit arms the request's deadline and queues it. The deadline counts
// from arrival, so time spent in the queue counts too.
func (s *server) submit(id int, work time.Duration) (<-chan response, error) {
	r := &request{id: id, work: work, expired: make(chan struct{}), reply: make(chan response, 1), server: s}
	t, err := s.timer.NewTimeout(r, s.deadline)
	if err != nil {
		return nil, err
	}
	r.timeout = t
	s.queue <- r
	return r.reply, nil
}

func (s *server) worker() {
	defer s.wg.Done()
	for r := range s.queue {
		if r.timeout.IsExpired() {
			s.skipped.Add(1) // already answered with the timeout error
			continue
		}
		if !doWork(r.work, r.expired) {
			s.abandoned.Add(1)
			continue
		}
		// Cancel succeeds only if the deadline task has not been claimed:
		// then, and only then, this worker answers.
		if r.timeout.Cancel() {
			r.answer(response{value: r.id * r.id})
			s.served.Add(1)
		} else {
			s.discarded.Add(1)
		}
	}
}

// doWork simulates d of work, and reports false if it was abandoned because
// expired was closed first.
func doWork(d time.Duration, expired <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-expired:
		return false
	}
}

func (s *server) close() {
	close(s.queue)
	s.wg.Wait()
}

// report is what the clients and the server saw.
type report struct {
	Requests, Slow int
	OK, TimedOut   int // answers with a result, and with the timeout error
	SlowTimedOut   int
	Errors         int             // answers with any other error
	OKLatency      []time.Duration // of requests answered with a result
	TimeoutAfter   []time.Duration // of requests answered with the timeout error
	Elapsed        time.Duration

	// Seen by the server.
	Served, Abandoned, Skipped, Discarded int64
	Duplicates                            int64 // requests answered twice
	Leftover                              int   // timeouts Stop returned
	Stats                                 hashedwheel.Stats
}

// check reports what went wrong, if anything.
func (r *report) check(cfg config) error {
	var errs []error
	if r.OK+r.TimedOut != r.Requests || r.Errors != 0 {
		errs = append(errs, fmt.Errorf("%d results + %d timeouts + %d errors != %d requests", r.OK, r.TimedOut, r.Errors, r.Requests))
	}
	if r.Leftover != 0 {
		errs = append(errs, fmt.Errorf("%d timeouts were neither cancelled nor expired", r.Leftover))
	}
	if r.Duplicates != 0 {
		errs = append(errs, fmt.Errorf("%d requests were answered twice", r.Duplicates))
	}
	if cfg.SlowWork > cfg.Deadline && r.SlowTimedOut != r.Slow {
		errs = append(errs, fmt.Errorf("only %d of %d slow requests timed out", r.SlowTimedOut, r.Slow))
	}
	if len(r.TimeoutAfter) > 0 && slices.Min(r.TimeoutAfter) < cfg.Deadline {
		errs = append(errs, fmt.Errorf("a request timed out after %v, before its deadline %v", slices.Min(r.TimeoutAfter), cfg.Deadline))
	}
	if r.Served != int64(r.OK) || r.Abandoned+r.Skipped+r.Discarded != int64(r.TimedOut) {
		errs = append(errs, fmt.Errorf("server counts %d served, %d abandoned + %d skipped + %d discarded; clients saw %d results, %d timeouts",
			r.Served, r.Abandoned, r.Skipped, r.Discarded, r.OK, r.TimedOut))
	}
	return errors.Join(errs...)
}

func (r *report) print(w io.Writer, cfg config) {
	fmt.Fprintf(w, "%d requests from %d clients to %d workers in %v; deadline %v, %d slow requests (%v of work)\n",
		r.Requests, cfg.Clients, cfg.Workers, r.Elapsed.Round(time.Millisecond), cfg.Deadline, r.Slow, cfg.SlowWork)
	fmt.Fprintf(w, "  answered with a result:        %5d   latency %s\n", r.OK, percentiles(r.OKLatency))
	fmt.Fprintf(w, "  answered with a timeout error: %5d   after   %s\n", r.TimedOut, percentiles(r.TimeoutAfter))
	fmt.Fprintf(w, "    of which slow requests: %d of %d\n", r.SlowTimedOut, r.Slow)
	fmt.Fprintf(w, "    server side: %d abandoned mid-work, %d expired in the queue and skipped, %d finished too late (result dropped)\n",
		r.Abandoned, r.Skipped, r.Discarded)
	fmt.Fprintf(w, "  answered twice: %d\n", r.Duplicates)
	s := r.Stats
	fmt.Fprintf(w, "timer: %d timeouts scheduled, %d cancelled by a response, %d expired into a timeout error\n",
		s.Scheduled, s.Cancelled, s.Expired)
	if err := r.check(cfg); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
	} else {
		fmt.Fprintln(w, "ok: every request answered exactly once, no timeout error before the deadline")
	}
}

func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(ds))
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("min %v  p50 %v  p99 %v  max %v", r(s[0]), r(s[len(s)/2]), r(s[len(s)*99/100]), r(s[len(s)-1]))
}

// run starts the server, lets the clients send every request and wait for
// its answer, and returns the counts.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Requests < 1 || cfg.Workers < 1 || cfg.Clients < 1 || cfg.Deadline <= 0 || cfg.SlowFrac < 0 || cfg.SlowFrac > 1 {
		return nil, fmt.Errorf("invalid configuration %+v", cfg)
	}
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick))
	if err != nil {
		return nil, err
	}
	defer timer.Stop()
	srv := newServer(timer, cfg.Workers, cfg.Deadline)

	// The work of each request, decided up front from the seed.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	work := make([]time.Duration, cfg.Requests)
	slow := make([]bool, cfg.Requests)
	r := &report{Requests: cfg.Requests}
	for i := range work {
		if rng.Float64() < cfg.SlowFrac {
			work[i], slow[i] = cfg.SlowWork, true
			r.Slow++
		} else if cfg.Work > 0 {
			work[i] = time.Duration(rng.Int64N(int64(cfg.Work)))
		}
	}

	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < cfg.Requests && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				sent := time.Now()
				reply, err := srv.submit(i, work[i])
				if err != nil {
					mu.Lock()
					r.Errors++
					mu.Unlock()
					continue
				}
				resp := <-reply
				took := time.Since(sent)
				mu.Lock()
				switch {
				case resp.err == nil && resp.value == i*i:
					r.OK++
					r.OKLatency = append(r.OKLatency, took)
				case errors.Is(resp.err, ErrDeadlineExceeded):
					r.TimedOut++
					r.TimeoutAfter = append(r.TimeoutAfter, took)
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
	srv.close()
	r.Served, r.Abandoned, r.Skipped = srv.served.Load(), srv.abandoned.Load(), srv.skipped.Load()
	r.Discarded, r.Duplicates = srv.discarded.Load(), srv.duplicates.Load()
	// Stop processes the last cancellations; every request was answered, so
	// no timeout is left.
	r.Leftover = len(timer.Stop())
	r.Stats = timer.Stats()
	return r, ctx.Err()
}
