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
// A waiting retry can also be moved: Job.RetryIn resets its timeout. In a
// second run the service is down for -outage and the jobs back off from
// -outage-base, longer than the outage. A health probe, a function the
// timer runs every -probe with Every, sees the service come back and moves
// every waiting retry to within one probe period, so that the jobs succeed
// soon after the outage instead of when their backoff ends.
//
//	go run ./examples/retry [-jobs 1000] [-fail 0.6] [-attempts 6] [-base 10ms] [-max 500ms] [-jitter 0.5]
//	                        [-outage 300ms] [-outage-base 1s] [-probe 20ms]
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
	Waits    []time.Duration // the backoff delay drawn before each retry, or the wait RetryIn set
	Gaps     []time.Duration // the time that really passed between attempts
	Moved    []int           // the indexes in Waits of the retries RetryIn moved
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
	lastErr error               // of the last attempt
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
	j.lastErr = err
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

// RetryIn moves the job's waiting retry to d from now, earlier or later
// than its backoff, as a client does when it learns that the service is
// back (gRPC's ResetConnectBackoff). It reports whether a retry was
// waiting; it returns false while an attempt runs and once the job ended.
func (j *Job) RetryIn(d time.Duration) bool {
	j.mu.Lock()
	if j.ended || j.pending == nil {
		j.mu.Unlock()
		return false
	}
	// Measured before the move: the retry cannot come sooner than this.
	wait := time.Since(j.last) + d
	if !j.pending.Reset(d) {
		// Reset changed nothing. If Cancel fails too, the retry is running
		// or the timer was stopped; if it succeeds, the retry was waiting,
		// and a new timeout replaces it.
		if !j.pending.Cancel() {
			j.mu.Unlock()
			return false
		}
		t, err := j.timer.AfterFunc(d, j.attempt)
		if err != nil { // the timer was stopped: give up, as next does
			j.result.Err = errors.Join(j.lastErr, err)
			res := j.end()
			j.mu.Unlock()
			j.done(res)
			return false
		}
		j.pending = t
	}
	k := len(j.result.Waits) - 1
	j.result.Waits[k] = wait
	j.result.Moved = append(j.result.Moved, k)
	j.mu.Unlock()
	return true
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

	// The second run: the service is down for Outage, the jobs back off
	// from OutageBase, and a health probe runs every Probe. Outage 0 skips it.
	Outage     time.Duration
	OutageBase time.Duration
	Probe      time.Duration
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
		Tick:       time.Millisecond,
		Seed:       1,
		Outage:     300 * time.Millisecond,
		OutageBase: time.Second,
		Probe:      20 * time.Millisecond,
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
	flag.DurationVar(&cfg.Outage, "outage", cfg.Outage, "how long the service is down in the second run (0: no second run)")
	flag.DurationVar(&cfg.OutageBase, "outage-base", cfg.OutageBase, "delay before the first retry in the second run")
	flag.DurationVar(&cfg.Probe, "probe", cfg.Probe, "period of the health probe in the second run")
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
	if cfg.Outage <= 0 {
		return
	}
	o, err := runOutage(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "retry:", err)
		os.Exit(1)
	}
	fmt.Println()
	o.print(os.Stdout, cfg)
	if err := o.check(); err != nil {
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
			if slices.Contains(res.Moved, k) {
				continue // its wait is the one RetryIn set
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
	if err := awaitJobs(ctx, jobs, results); err != nil {
		return r, err
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

// outageBackoff is the policy of the second run: the first retry comes
// after OutageBase, less the jitter.
func outageBackoff(cfg config) Backoff {
	b := cfg.Backoff
	b.Base, b.Max = cfg.OutageBase, max(b.Max, cfg.OutageBase)
	return b
}

// outageReport is what the second run saw.
type outageReport struct {
	Jobs    int
	Results []Result
	After   []time.Duration // from the service's return to each job's success
}

// check reports what went wrong, if anything: every job fails once while
// the service is down and succeeds at its first retry, which comes after
// the service is back and not before its wait.
func (o *outageReport) check() error {
	var errs []error
	for i, res := range o.Results {
		if res.Err != nil || res.Attempts != 2 {
			errs = append(errs, fmt.Errorf("job %d ended after %d attempts with %v, want success at attempt 2", i, res.Attempts, res.Err))
		}
		if len(res.Gaps) != 1 || len(res.Waits) != 1 || res.Gaps[0] < res.Waits[0] {
			errs = append(errs, fmt.Errorf("job %d waited %v for a retry due after %v", i, res.Gaps, res.Waits))
		}
		if len(errs) > 5 {
			break
		}
	}
	return errors.Join(errs...)
}

// moved counts the jobs whose retry the probe moved.
func (o *outageReport) moved() int {
	n := 0
	for _, res := range o.Results {
		if len(res.Moved) > 0 {
			n++
		}
	}
	return n
}

func (o *outageReport) print(w io.Writer, cfg config) {
	b := outageBackoff(cfg)
	fmt.Fprintf(w, "outage: the service is down for %v; %d jobs fail their first call and wait %v to %v to retry\n",
		cfg.Outage, o.Jobs, b.Delay(1, 1), b.Delay(1, 0))
	fmt.Fprintf(w, "a health probe, run every %v by timer.Every, saw the service back and moved %d waiting retries forward\n",
		cfg.Probe, o.moved())
	ok := 0
	for _, res := range o.Results {
		if res.Err == nil {
			ok++
		}
	}
	fmt.Fprintf(w, "succeeded: %5d   ", ok)
	if len(o.After) > 0 {
		s := slices.Sorted(slices.Values(o.After))
		r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
		fmt.Fprintf(w, "%v (min) to %v (max) after the service came back, median %v", r(s[0]), r(s[len(s)-1]), r(s[len(s)/2]))
	}
	fmt.Fprintln(w)
	if err := o.check(); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
	} else {
		fmt.Fprintln(w, "ok: every job succeeded at its first retry, none before its wait")
	}
}

// runOutage runs every job against a service that is down for cfg.Outage,
// with a health probe that moves the waiting retries when it is back.
func runOutage(ctx context.Context, cfg config) (*outageReport, error) {
	b := outageBackoff(cfg)
	// Every job's first retry is due after the outage: without the probe,
	// each would succeed at attempt 2 all the same, only later.
	if cfg.Jobs < 1 || cfg.Outage <= 0 || cfg.Probe <= 0 || b.MaxAttempts < 2 || b.Factor < 1 ||
		b.Jitter < 0 || b.Jitter > 1 || b.Delay(1, 1) <= cfg.Outage {
		return nil, fmt.Errorf("invalid configuration %+v: the first retry must come after the outage", cfg)
	}
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick))
	if err != nil {
		return nil, err
	}
	defer timer.Stop()

	// The service is down until up is closed, cfg.Outage after the jobs'
	// first calls.
	up := make(chan struct{})
	var back time.Time // when it came back; written before up is closed
	op := func(int) error {
		select {
		case <-up:
			return nil
		default:
			return errUnavailable
		}
	}
	o := &outageReport{Jobs: cfg.Jobs, Results: make([]Result, cfg.Jobs)}
	var mu sync.Mutex
	results := make(chan struct{}, cfg.Jobs)
	jobs := make([]*Job, cfg.Jobs)
	for i := range jobs {
		jobs[i] = Retry(timer, b, rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)), op, func(res Result) {
			o.Results[i] = res
			if res.Err == nil { // the call saw up closed, and back written
				mu.Lock()
				o.After = append(o.After, time.Since(back))
				mu.Unlock()
			}
			results <- struct{}{}
		})
	}
	if _, err := timer.AfterFunc(cfg.Outage, func() {
		back = time.Now()
		close(up)
	}); err != nil {
		return nil, err
	}

	// The probe acts once: the first time it finds the service back, it
	// spreads the retries over one probe period, so that the jobs do not
	// all call the service in the same tick, and cancels itself. Its first
	// run waits for its own handle, which Every returns.
	var probe hashedwheel.Timeout
	armed := make(chan struct{})
	var seen atomic.Bool
	probe, err = timer.Every(cfg.Probe, func() {
		<-armed
		select {
		case <-up:
		default:
			return
		}
		if seen.Swap(true) {
			return
		}
		for _, j := range jobs {
			j.RetryIn(rand.N(cfg.Probe))
		}
		probe.Cancel()
	})
	close(armed)
	if err != nil {
		return nil, err
	}
	defer probe.Cancel() // if the run ends before the service is back

	return o, awaitJobs(ctx, jobs, results)
}

// awaitJobs waits for every job's one receive on results. If ctx is done
// first it stops the jobs, waits for them all the same (every job ends once,
// stopped or not) and returns ctx.Err().
func awaitJobs(ctx context.Context, jobs []*Job, results <-chan struct{}) error {
	for received := 0; received < len(jobs); {
		select {
		case <-results:
			received++
		case <-ctx.Done():
			for _, j := range jobs {
				j.Stop()
			}
			for ; received < len(jobs); received++ {
				<-results
			}
			return ctx.Err()
		}
	}
	return nil
}
