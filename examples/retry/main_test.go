package main

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond, Factor: 2, Jitter: 0.5}
	for _, c := range []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{1, 0, 10 * time.Millisecond},
		{2, 0, 20 * time.Millisecond},
		{3, 0, 40 * time.Millisecond},
		{4, 0, 50 * time.Millisecond}, // capped
		{9, 0, 50 * time.Millisecond},
		{1, 0.5, 7500 * time.Microsecond},
		{3, 1, 20 * time.Millisecond}, // the most jitter takes off half
	} {
		if got := b.Delay(c.n, c.r); got != c.want {
			t.Errorf("Delay(%d, %v) = %v, want %v", c.n, c.r, got, c.want)
		}
	}
}

func TestRetryRun(t *testing.T) {
	cfg := defaultConfig()
	cfg.Jobs = 200
	cfg.Backoff.Base = 2 * time.Millisecond
	cfg.Backoff.Max = 20 * time.Millisecond
	r, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.check(cfg); err != nil {
		t.Fatal(err)
	}
	ok, retries := 0, 0
	for _, n := range r.SucceededAt {
		ok += n
	}
	for _, res := range r.Results {
		retries += res.Attempts - 1
	}
	if ok+r.GaveUp != cfg.Jobs || r.Stopped != 0 {
		t.Fatalf("%d succeeded + %d gave up, %d stopped; want %d jobs", ok, r.GaveUp, r.Stopped, cfg.Jobs)
	}
	if r.SucceededAt[1] == 0 || r.GaveUp == 0 {
		t.Fatalf("want some first-time successes and some give-ups at -fail %v: %v, %d", cfg.Fail, r.SucceededAt, r.GaveUp)
	}
	if s := r.Stats; s.Scheduled != uint64(retries) || s.Expired != uint64(retries) {
		t.Fatalf("timer stats %+v: want %d retries scheduled and run", s, retries)
	}
	var out bytes.Buffer
	r.print(&out, cfg)
	if !strings.Contains(out.String(), "ok: every job succeeded or gave up at the right attempt") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestRetryStop(t *testing.T) {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Stop()
	b := Backoff{Base: time.Hour, Max: time.Hour, Factor: 2, MaxAttempts: 3}
	done := make(chan Result, 2)
	calls := 0
	j := Retry(timer, b, rand.New(rand.NewPCG(1, 1)), func(int) error {
		calls++
		return errUnavailable
	}, func(r Result) { done <- r })

	// The first attempt failed on this goroutine; the retry waits an hour.
	if calls != 1 || j.pending == nil {
		t.Fatalf("after Retry: %d calls, pending retry %v", calls, j.pending)
	}
	pending := j.pending
	if !j.Stop() {
		t.Fatal("Stop of a waiting job returned false")
	}
	if j.Stop() {
		t.Fatal("second Stop returned true")
	}
	if !pending.IsCancelled() {
		t.Fatal("Stop did not cancel the scheduled retry")
	}
	r := <-done
	if !errors.Is(r.Err, ErrStopped) || r.Attempts != 1 {
		t.Fatalf("result %+v, want ErrStopped after 1 attempt", r)
	}
	select {
	case r := <-done:
		t.Fatalf("done called twice; second time with %+v", r)
	default:
	}
}

func TestRetryTimerStopped(t *testing.T) {
	timer, err := hashedwheel.New()
	if err != nil {
		t.Fatal(err)
	}
	timer.Stop()
	done := make(chan Result, 1)
	Retry(timer, Backoff{Base: time.Millisecond, Max: time.Millisecond, Factor: 2, MaxAttempts: 3},
		rand.New(rand.NewPCG(1, 1)), func(int) error { return errUnavailable }, func(r Result) { done <- r })
	r := <-done
	if !errors.Is(r.Err, errUnavailable) || !errors.Is(r.Err, hashedwheel.ErrStopped) || r.Attempts != 1 {
		t.Fatalf("result %+v: want the call's error and ErrStopped after 1 attempt", r)
	}
}

func TestRetryRunStopsWithContext(t *testing.T) {
	cfg := defaultConfig()
	cfg.Jobs = 50
	cfg.Fail = 0.9
	cfg.Backoff.Base, cfg.Backoff.Max = time.Hour, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r, err := run(ctx, cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	stopped := 0
	for _, res := range r.Results {
		if errors.Is(res.Err, ErrStopped) {
			stopped++
		}
	}
	if stopped == 0 {
		t.Fatal("no job was stopped")
	}
}

// TestRetryIn moves a retry due in an hour to now: it runs at once. While
// the attempt runs, and once the job has ended, there is no retry to move.
func TestRetryIn(t *testing.T) {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Stop()
	inCall := make(chan struct{}, 1)
	release := make(chan error)
	quit := make(chan struct{}) // closed before Stop, which may wait for the op
	defer close(quit)
	op := func(attempt int) error {
		if attempt == 1 {
			return errUnavailable
		}
		inCall <- struct{}{}
		select {
		case err := <-release:
			return err
		case <-quit:
			return errUnavailable
		}
	}
	done := make(chan Result, 1)
	b := Backoff{Base: time.Hour, Max: time.Hour, Factor: 2, MaxAttempts: 3}
	j := Retry(timer, b, rand.New(rand.NewPCG(1, 1)), op, func(r Result) { done <- r })

	if !j.RetryIn(0) {
		t.Fatal("RetryIn of a waiting retry returned false")
	}
	select {
	case <-inCall:
	case <-time.After(10 * time.Second):
		t.Fatal("the retry moved to now did not run")
	}
	if j.RetryIn(0) {
		t.Error("RetryIn while the attempt runs returned true")
	}
	release <- nil
	r := <-done
	if r.Err != nil || r.Attempts != 2 {
		t.Fatalf("result %+v, want success at attempt 2", r)
	}
	if len(r.Waits) != 1 || r.Waits[0] >= time.Minute || !slices.Equal(r.Moved, []int{0}) || r.Gaps[0] < r.Waits[0] {
		t.Errorf("result %+v: want one moved wait of about nothing, and the retry after it", r)
	}
	if j.RetryIn(0) {
		t.Error("RetryIn of an ended job returned true")
	}
}

// TestRetryInLater moves a retry due at once an hour later: the job's
// timeout then has the later deadline, and Stop still cancels it.
func TestRetryInLater(t *testing.T) {
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Stop()
	done := make(chan Result, 1)
	b := Backoff{Base: 50 * time.Millisecond, Max: 50 * time.Millisecond, Factor: 2, MaxAttempts: 3}
	// The op runs only on the calling goroutine unless the moved retry
	// comes early; then the count shows it.
	var calls atomic.Int32
	j := Retry(timer, b, rand.New(rand.NewPCG(1, 1)), func(int) error {
		calls.Add(1)
		return errUnavailable
	}, func(r Result) { done <- r })

	before := time.Now()
	if !j.RetryIn(time.Hour) {
		t.Fatal("RetryIn of a waiting retry returned false")
	}
	j.mu.Lock()
	pending := j.pending
	j.mu.Unlock()
	if d := pending.Deadline().Sub(before); d < 59*time.Minute || d > time.Hour+time.Minute {
		t.Errorf("the retry is due %v after RetryIn, want an hour", d)
	}
	if !j.Stop() {
		t.Fatal("Stop of a waiting job returned false")
	}
	if !pending.IsCancelled() {
		t.Error("Stop did not cancel the moved retry")
	}
	r := <-done
	if !errors.Is(r.Err, ErrStopped) || r.Attempts != 1 || calls.Load() != 1 {
		t.Fatalf("result %+v after %d calls, want ErrStopped after 1", r, calls.Load())
	}
	if len(r.Waits) != 1 || r.Waits[0] < time.Hour || !slices.Equal(r.Moved, []int{0}) {
		t.Errorf("result %+v: want the wait of an hour that RetryIn set", r)
	}
}

// TestRetryOutage backs off for far longer than the outage: only the probe
// moving the retries lets the jobs succeed soon after the service is back.
func TestRetryOutage(t *testing.T) {
	cfg := defaultConfig()
	cfg.Jobs = 100
	cfg.Outage = 100 * time.Millisecond
	cfg.OutageBase = 10 * time.Second // the first retries are due 5s to 10s after the failure
	cfg.Probe = 10 * time.Millisecond
	r, err := runOutage(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	if n := r.moved(); n != cfg.Jobs {
		t.Errorf("the probe moved %d of %d retries", n, cfg.Jobs)
	}
	const bound = 3 * time.Second // well before the first retry would come, on a loaded machine
	if len(r.After) != cfg.Jobs {
		t.Fatalf("%d successes timed, want %d", len(r.After), cfg.Jobs)
	}
	for _, after := range r.After {
		if after < 0 || after > bound {
			t.Errorf("a job succeeded %v after the service came back, want 0 to %v", after, bound)
		}
	}
	var out bytes.Buffer
	r.print(&out, cfg)
	for _, want := range []string{"moved 100 waiting retries", "succeeded:   100", "ok: every job succeeded at its first retry"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRetryOutageCheckCatchesFailures(t *testing.T) {
	good := Result{Attempts: 2, Waits: []time.Duration{time.Second}, Gaps: []time.Duration{time.Second}}
	if err := (&outageReport{Results: []Result{good}}).check(); err != nil {
		t.Fatalf("check rejected a good report: %v", err)
	}
	for _, mod := range []func(*Result){
		func(r *Result) { r.Err = errUnavailable },
		func(r *Result) { r.Attempts = 3 },
		func(r *Result) { r.Gaps = []time.Duration{time.Second - 1} },
		func(r *Result) { r.Waits = nil },
	} {
		r := good
		mod(&r)
		if (&outageReport{Results: []Result{r}}).check() == nil {
			t.Errorf("check accepted %+v", r)
		}
	}
}

func TestRetryOutageInvalidConfig(t *testing.T) {
	cfg := defaultConfig()
	cfg.OutageBase = cfg.Outage // the first retry could come before the service is back
	if _, err := runOutage(context.Background(), cfg); err == nil {
		t.Error("runOutage accepted a backoff shorter than the outage")
	}
}
