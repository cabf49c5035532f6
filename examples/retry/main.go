// Command retry shows retries with exponential backoff and jitter built on
// the timer: a failed call is tried again after a delay that doubles with
// each attempt, up to a cap, randomised so that many clients that failed
// together do not retry together. It stops on success, after -attempts
// attempts, or when the job is stopped.
//
// A waiting retry is a timeout on the wheel, not a sleeping goroutine, so
// thousands of jobs can back off at once for the cost of a few bytes each.
// The program runs -jobs jobs against a service that fails a fraction
// -fail of the calls, and reports how many succeeded at which attempt, how
// many gave up, that no retry came before its backoff delay, and how few
// goroutines it used.
//
//	go run ./examples/retry [-jobs 1000] [-fail 0.6] [-attempts 6] [-base 10ms] [-max 500ms] [-jitter 0.5]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// Backoff is an exponential backoff policy with jitter.
type Backoff struct {
	Base        time.Duration // the delay before the first retry
	Max         time.Duration // the longest delay
	Factor      float64       // growth per attempt, usually 2
	Jitter      float64       // in [0, 1]: a delay d is drawn from [d·(1-Jitter), d]
	MaxAttempts int           // attempts in all, the first one included
}

// Delay returns the delay before retry n (1 for the first retry), using r,
// a random number in [0, 1), for the jitter.
func (b Backoff) Delay(n int, r float64) time.Duration {
	d := float64(b.Base) * math.Pow(b.Factor, float64(n-1))
	d = min(d, float64(b.Max))
	return time.Duration(d * (1 - b.Jitter*r))
}

// ErrStopped is the result of a job stopped before it succeeded.
var ErrStopped = errors.New("retry: stopped")

// Result is how a job ended.
type Result struct {
	Attempts int
	Err      error           // nil on success; the last error, or ErrStopped
	Waits    []time.Duration // the backoff delay drawn before each retry
	Gaps     []time.Duration // the time that really passed between attempts
}

// Job is an operation being retried.
type Job struct {
	timer   *hashedwheel.HashedWheelTimer
	backoff Backoff
	op      func(attempt int) error
	rng     *rand.Rand
	done    func(Result)

	mu      sync.Mutex
	result  Result
	last    time.Time           // when the last attempt started
	pending hashedwheel.Timeout // the scheduled retry, if any
	ended   bool
}

// Retry calls op now, on the calling goroutine, and while it fails, again
// after each backoff delay on the timer, until it succeeds, the attempts
// run out, or Stop is called. done is called once with the result. rng
// draws the jitter; it is used by one attempt at a time.
func Retry(timer *hashedwheel.HashedWheelTimer, b Backoff, rng *rand.Rand, op func(attempt int) error, done func(Result)) *Job {
	j := &Job{timer: timer, backoff: b, op: op, rng: rng, done: done}
	j.attempt()
	return j
}

// attempt makes one attempt and schedules the next if it failed.
func (j *Job) attempt() {
	j.mu.Lock()
	if j.ended { // stopped while this retry was being claimed
		j.mu.Unlock()
		return
	}
	now := time.Now()
	if j.result.Attempts > 0 {
		j.result.Gaps = append(j.result.Gaps, now.Sub(j.last))
	}
	j.last = now
	j.result.Attempts++
	n := j.result.Attempts
	j.mu.Unlock()

	err := j.op(n) // not under the lock: Stop must not wait for a slow call

	j.mu.Lock()
	res, ended := j.next(n, err)
	j.mu.Unlock()
	if ended {
		j.done(res)
	}
}

// next schedules the retry after a failed attempt n, or ends the job. It
// returns the result and true if the job ended. j.mu is held.
func (j *Job) next(n int, err error) (Result, bool) {
	if j.ended { // stopped during the call
		return Result{}, false
	}
	if err == nil || n >= j.backoff.MaxAttempts {
		j.result.Err = err
		return j.end(), true
	}
	delay := j.backoff.Delay(n, j.rng.Float64())
	t, terr := j.timer.AfterFunc(delay, j.attempt)
	if terr != nil { // the timer was stopped: give up with the call's error
		j.result.Err = errors.Join(err, terr)
		return j.end(), true
	}
	j.result.Waits = append(j.result.Waits, delay)
	j.pending = t
	return Result{}, false
}

// end marks the job ended and returns its result. j.mu is held.
func (j *Job) end() Result {
	j.ended = true
	j.pending = nil
	return j.result
}

// Stop ends a job that has not finished: its scheduled retry is cancelled
// and it ends with ErrStopped. It reports whether it stopped the job.
func (j *Job) Stop() bool {
	j.mu.Lock()
	if j.ended {
		j.mu.Unlock()
		return false
	}
	// If Cancel fails, the retry is already running: it will find the job
	// ended and do nothing.
	if j.pending != nil {
		j.pending.Cancel()
	}
	j.result.Err = ErrStopped
	res := j.end()
	j.mu.Unlock()
	j.done(res)
	return true
}

// errUnavailable is the error of the simulated service.
var errUnavailable = errors.New("service unavailable")

type config struct {
	Jobs    int
	Fail    float64 // the fraction of calls that fail
	Backoff Backoff
	Tick    time.Duration
	Seed    uint64
}

func defaultConfig() config {
	return config{
		Jobs: 1000,
		Fail: 0.6,
		Backoff: Backoff{
			Base:        10 * time.Millisecond,
			Max:         500 * time.Millisecond,
			Factor:      2,
			Jitter:      0.5,
			MaxAttempts: 6,
		},
		Tick: time.Millisecond,
		Seed: 1,
	}
}

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "concurrent jobs")
	flag.Float64Var(&cfg.Fail, "fail", cfg.Fail, "fraction of the service's calls that fail")
	flag.IntVar(&cfg.Backoff.MaxAttempts, "attempts", cfg.Backoff.MaxAttempts, "attempts per job, the first included")
	flag.DurationVar(&cfg.Backoff.Base, "base", cfg.Backoff.Base, "delay before the first retry")
	flag.DurationVar(&cfg.Backoff.Max, "max", cfg.Backoff.Max, "longest delay between attempts")
	flag.Float64Var(&cfg.Backoff.Factor, "factor", cfg.Backoff.Factor, "growth of the delay per attempt")
	flag.Float64Var(&cfg.Backoff.Jitter, "jitter", cfg.Backoff.Jitter, "fraction of each delay that is random, in [0, 1]")
	flag.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick duration of the timer")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "retry:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, cfg)
	if err := r.check(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "retry:", err)
		os.Exit(1)
	}
}

// report sums up the jobs' results.
type report struct {
	Jobs          int
	Results       []Result
	FailsPlanned  []int // calls of each job that fail before one succeeds
	SucceededAt   map[int]int
	GaveUp        int
	Stopped       int
	Elapsed       time.Duration
	MaxGoroutines int
	Stats         hashedwheel.Stats
}

// check reports what went wrong, if anything.
func (r *report) check(cfg config) error {
	var errs []error
	for i, res := range r.Results {
		want := min(r.FailsPlanned[i]+1, cfg.Backoff.MaxAttempts)
		switch {
		case res.Err == nil && res.Attempts != r.FailsPlanned[i]+1:
			errs = append(errs, fmt.Errorf("job %d succeeded at attempt %d, want %d", i, res.Attempts, r.FailsPlanned[i]+1))
		case errors.Is(res.Err, errUnavailable) && res.Attempts != want:
			errs = append(errs, fmt.Errorf("job %d gave up after %d attempts, want %d", i, res.Attempts, want))
		case res.Err != nil && !errors.Is(res.Err, errUnavailable) && !errors.Is(res.Err, ErrStopped):
			errs = append(errs, fmt.Errorf("job %d: %v", i, res.Err))
		}
		if len(res.Gaps) != len(res.Waits) {
			errs = append(errs, fmt.Errorf("job %d: %d gaps for %d delays", i, len(res.Gaps), len(res.Waits)))
			continue
		}
		for k, gap := range res.Gaps {
			if gap < res.Waits[k] {
				errs = append(errs, fmt.Errorf("job %d retried after %v, before its delay %v", i, gap, res.Waits[k]))
			}
			if lo := cfg.Backoff.Delay(k+1, 1); res.Waits[k] < lo || res.Waits[k] > cfg.Backoff.Delay(k+1, 0) {
				errs = append(errs, fmt.Errorf("job %d: delay %d is %v, outside the backoff's range", i, k+1, res.Waits[k]))
			}
		}
		if len(errs) > 5 {
			break
		}
	}
	return errors.Join(errs...)
}

func (r *report) print(w io.Writer, cfg config) {
	b := cfg.Backoff
	fmt.Fprintf(w, "%d jobs call a service that fails %.0f%% of the calls; at most %d attempts each,\n",
		r.Jobs, 100*cfg.Fail, b.MaxAttempts)
	fmt.Fprintf(w, "retry n waits %v x %g^(n-1), capped at %v, less up to %.0f%% at random (jitter)\n\n",
		b.Base, b.Factor, b.Max, 100*b.Jitter)
	ok := 0
	for _, n := range r.SucceededAt {
		ok += n
	}
	fmt.Fprintf(w, "succeeded: %5d   by attempt:", ok)
	for a := 1; a <= b.MaxAttempts; a++ {
		fmt.Fprintf(w, " %d:%d", a, r.SucceededAt[a])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "gave up:   %5d   after %d failed attempts\n", r.GaveUp, b.MaxAttempts)
	if r.Stopped > 0 {
		fmt.Fprintf(w, "stopped:   %5d\n", r.Stopped)
	}
	var margins, waits []time.Duration
	for _, res := range r.Results {
		for k, gap := range res.Gaps {
			margins = append(margins, gap-res.Waits[k])
			waits = append(waits, res.Waits[k])
		}
	}
	if len(margins) > 0 {
		slices.Sort(margins)
		fmt.Fprintf(w, "retries:   %5d   delays %v to %v; each came after its delay, by %v (median) to %v (max)\n",
			len(margins), slices.Min(waits).Round(100*time.Microsecond), slices.Max(waits).Round(100*time.Microsecond),
			margins[len(margins)/2].Round(10*time.Microsecond), margins[len(margins)-1].Round(10*time.Microsecond))
	}
	fmt.Fprintf(w, "took %v, with at most %d goroutines at once for %d jobs: a waiting retry is a timeout, not a goroutine\n",
		r.Elapsed.Round(time.Millisecond), r.MaxGoroutines, r.Jobs)
	s := r.Stats
	fmt.Fprintf(w, "timer: %d retries scheduled, %d run, %d cancelled\n", s.Scheduled, s.Expired, s.Cancelled)
	if err := r.check(cfg); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
	} else {
		fmt.Fprintln(w, "ok: every job succeeded or gave up at the right attempt, no retry before its delay")
	}
}

// run starts every job at once against the simulated service and waits for
// all of them, stopping those still running if ctx ends.
func run(ctx context.Context, cfg config) (*report, error) {
	b := cfg.Backoff
	if cfg.Jobs < 1 || cfg.Fail < 0 || cfg.Fail >= 1 || b.MaxAttempts < 1 || b.Base < 0 || b.Max < b.Base ||
		b.Factor < 1 || b.Jitter < 0 || b.Jitter > 1 {
		return nil, fmt.Errorf("invalid configuration %+v", cfg)
	}
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick))
	if err != nil {
		return nil, err
	}
	defer timer.Stop()

	// Each job's service calls fail a set number of times before one
	// succeeds: a geometric draw, fixed up front so the run can be checked.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	r := &report{Jobs: cfg.Jobs, Results: make([]Result, cfg.Jobs), FailsPlanned: make([]int, cfg.Jobs),
		SucceededAt: map[int]int{}}
	for i := range r.FailsPlanned {
		for rng.Float64() < cfg.Fail {
			r.FailsPlanned[i]++
		}
	}

	var maxG atomic.Int64
	sample := func() {
		g := int64(runtime.NumGoroutine())
		for m := maxG.Load(); g > m && !maxG.CompareAndSwap(m, g); m = maxG.Load() {
		}
	}
	results := make(chan struct{}, cfg.Jobs)
	jobs := make([]*Job, cfg.Jobs)
	start := time.Now()
	for i := range jobs {
		fails := r.FailsPlanned[i]
		op := func(attempt int) error {
			sample()
			if attempt <= fails {
				return errUnavailable
			}
			return nil
		}
		jobs[i] = Retry(timer, b, rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)), op, func(res Result) {
			r.Results[i] = res
			results <- struct{}{}
		})
	}
	for received := 0; received < cfg.Jobs; {
		select {
		case <-results:
			received++
		case <-ctx.Done():
			for _, j := range jobs {
				j.Stop()
			}
			for ; received < cfg.Jobs; received++ {
				<-results // every job ends once, stopped or not
			}
			return r, ctx.Err()
		}
	}
	r.Elapsed = time.Since(start)
	r.MaxGoroutines = int(maxG.Load())

	for _, res := range r.Results {
		switch {
		case res.Err == nil:
			r.SucceededAt[res.Attempts]++
		case errors.Is(res.Err, ErrStopped):
			r.Stopped++
		default:
			r.GaveUp++
		}
	}
	timer.Stop()
	r.Stats = timer.Stats()
	return r, nil
}
