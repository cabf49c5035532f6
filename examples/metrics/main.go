// Command metrics shows how to watch a timer in production: its Stats
// exported with the standard library's expvar, served over HTTP at
// /debug/vars, next to the runtime's memstats.
//
// It runs a load of request-style timeouts (most cancelled, the rest
// fired) for -duration, prints a line of the counters every second, stops
// the timer, then fetches /debug/vars over HTTP and prints the timer's
// variable, every field of Stats in its JSON form, checking that its
// counters add up:
//
//	scheduled = pending + expired + cancelled + returned_by_stop
//
// With -serve it keeps serving afterwards, for curl or a browser:
//
//	go run ./examples/metrics -addr 127.0.0.1:8080 -serve
//	curl -s 127.0.0.1:8080/debug/vars | jq .hashedwheel
//
// # Prometheus and OpenTelemetry
//
// The modules github.com/wheeltimer/wheeltimer/exporters/prometheus (a
// prometheus.Collector) and github.com/wheeltimer/wheeltimer/exporters/otel
// (observable instruments on a metric.Meter) export the same fields,
// hashedwheel.StatsFields, without this module depending on either.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	wheelexpvar "github.com/wheeltimer/wheeltimer/exporters/expvar"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// varName is the expvar variable holding the timer's counters.
const varName = "hashedwheel"

type config struct {
	Addr       string
	Duration   time.Duration // of the load
	Rate       int           // timeouts scheduled per second
	Cancel     float64       // fraction of them cancelled
	MaxDelay   time.Duration // delays are uniform in [0, MaxDelay)
	MaxPending int64         // WithMaxPendingTimeouts; 0: no limit
	Tick       time.Duration
	Every      time.Duration // between printed lines
	Serve      bool          // keep serving after the load, until interrupted
}

func defaultConfig() config {
	return config{
		Addr:     "127.0.0.1:0",
		Duration: 3 * time.Second,
		Rate:     20000,
		Cancel:   0.8,
		MaxDelay: 500 * time.Millisecond,
		Tick:     10 * time.Millisecond,
		Every:    time.Second,
	}
}

func main() {
	cfg := defaultConfig()
	flag.StringVar(&cfg.Addr, "addr", cfg.Addr, "address to serve /debug/vars on")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run the load")
	flag.IntVar(&cfg.Rate, "rate", cfg.Rate, "timeouts scheduled per second")
	flag.Float64Var(&cfg.Cancel, "cancel", cfg.Cancel, "fraction of the timeouts cancelled")
	flag.DurationVar(&cfg.MaxDelay, "max-delay", cfg.MaxDelay, "longest delay of a timeout")
	flag.Int64Var(&cfg.MaxPending, "max-pending", cfg.MaxPending, "pending timeouts allowed (0: no limit); see rejected_full")
	flag.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick duration of the timer")
	flag.BoolVar(&cfg.Serve, "serve", cfg.Serve, "keep serving /debug/vars after the load, until interrupted")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

// run serves /debug/vars, runs the load, and checks what the endpoint
// reports after the timer stopped.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.Rate < 1 || cfg.Cancel < 0 || cfg.Cancel > 1 || cfg.MaxDelay < 0 || cfg.Every <= 0 {
		return fmt.Errorf("invalid configuration %+v", cfg)
	}
	opts := []hashedwheel.Option{hashedwheel.WithTickDuration(cfg.Tick)}
	if cfg.MaxPending > 0 {
		opts = append(opts, hashedwheel.WithMaxPendingTimeouts(cfg.MaxPending))
	}
	timer, err := hashedwheel.New(opts...)
	if err != nil {
		return err
	}
	defer timer.Stop()
	// A name serves one timer: free it for the next run.
	if err := wheelexpvar.Publish(varName, timer); err != nil {
		return err
	}
	defer wheelexpvar.Unpublish(varName)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", expvar.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/debug/vars"
	fmt.Fprintf(out, "serving %s; load: %d timeouts/s for %v, %.0f%% cancelled\n", url, cfg.Rate, cfg.Duration, 100*cfg.Cancel)

	loadCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		load(loadCtx, timer, cfg)
	}()
	ticker := time.NewTicker(cfg.Every)
	defer ticker.Stop()
	start := time.Now()
	for waiting := true; waiting; {
		select {
		case <-ticker.C:
			printLine(out, time.Since(start), timer.Stats())
		case <-loadDone:
			waiting = false
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	left := timer.Stop()
	fmt.Fprintf(out, "load done; Stop returned %d pending timeouts\n\nGET %s → %q:\n", len(left), url, varName)
	vars, err := fetch(ctx, url)
	if err != nil {
		return err
	}
	raw, ok := vars[varName]
	if !ok {
		return fmt.Errorf("%s has no %q variable", url, varName)
	}
	var got map[string]float64
	if err := json.Unmarshal(raw, &got); err != nil {
		return fmt.Errorf("%q: %w", varName, err)
	}
	pretty, _ := json.MarshalIndent(got, "", "  ")
	fmt.Fprintf(out, "%s\n", pretty)
	if err := checkVars(got, len(left)); err != nil {
		return err
	}
	fmt.Fprintln(out, "ok: scheduled = pending + expired + cancelled + returned_by_stop")

	if cfg.Serve {
		fmt.Fprintf(out, "serving %s until interrupted (Ctrl-C)\n", url)
		<-ctx.Done()
	}
	return nil
}

// load schedules cfg.Rate timeouts per second until ctx ends, cancelling a
// fraction of them shortly after, as responses would.
func load(ctx context.Context, timer *hashedwheel.HashedWheelTimer, cfg config) {
	const step = 10 * time.Millisecond
	ticker := time.NewTicker(step)
	defer ticker.Stop()
	rng := rand.New(rand.NewPCG(1, 2))
	var carry float64
	var toCancel []hashedwheel.Timeout
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		// The timeouts of the previous step get their responses now.
		for _, t := range toCancel {
			t.Cancel()
		}
		toCancel = toCancel[:0]
		carry += float64(cfg.Rate) * step.Seconds()
		n := int(carry)
		carry -= float64(n)
		for range n {
			delay := time.Duration(0)
			if cfg.MaxDelay > 0 {
				delay = time.Duration(rng.Int64N(int64(cfg.MaxDelay)))
			}
			t, err := timer.AfterFunc(delay, func() {})
			if err != nil {
				continue // counted by the timer as a rejection
			}
			if rng.Float64() < cfg.Cancel {
				toCancel = append(toCancel, t)
			}
		}
	}
}

func printLine(out io.Writer, at time.Duration, s hashedwheel.Stats) {
	fmt.Fprintf(out, "%4.0fs  pending %6d  scheduled %7d  expired %7d  cancelled %7d  rejected %d  ticks %4d  max tick lag %v\n",
		at.Seconds(), s.Pending, s.Scheduled, s.Expired, s.Cancelled, s.RejectedFull+s.RejectedStopped, s.Ticks,
		s.MaxTickLag.Round(10*time.Microsecond))
}

// fetch gets and decodes the expvar page at url.
func fetch(ctx context.Context, url string) (map[string]json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var vars map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return vars, nil
}

// checkVars checks the exported counters of a stopped timer: every field
// of Stats is there, they add up, and the timeouts Stop returned are
// counted.
func checkVars(v map[string]float64, returned int) error {
	for _, f := range hashedwheel.StatsFields() {
		name := f.Name
		if f.Unit == "s" {
			name += "_seconds"
		}
		if _, ok := v[name]; !ok {
			return fmt.Errorf("the exported variable lacks %s", name)
		}
	}
	var errs []error
	if sum := v["pending"] + v["expired"] + v["cancelled"] + v["returned_by_stop"]; v["scheduled"] != sum {
		errs = append(errs, fmt.Errorf("scheduled %v != pending + expired + cancelled + returned by stop = %v", v["scheduled"], sum))
	}
	if v["returned_by_stop"] != float64(returned) {
		errs = append(errs, fmt.Errorf("returned_by_stop %v, but Stop returned %d", v["returned_by_stop"], returned))
	}
	if v["scheduled"] == 0 {
		errs = append(errs, errors.New("nothing was scheduled"))
	}
	return errors.Join(errs...)
}
