// Command demo is what `make demo` runs: it shows in about ten seconds what
// the hashed wheel timer does and why it is cheap.
//
// It schedules a million timeouts with delays spread over a few seconds,
// cancels most of them, as a server cancels the deadline of each request
// that is answered in time, and lets the rest fire. A progress line shows
// the pending, fired and cancelled counts, the event rate and the worst
// lateness so far. Then it runs the same workload on time.AfterFunc and
// prints both side by side: how fast timeouts are scheduled and cancelled,
// how late they fire (p50, p99, max; never early), and how much memory
// each pending timeout holds.
//
// The wheel trades precision for cost: it fires a timeout on the first tick
// after its deadline, so it is up to one tick late by design, where
// time.AfterFunc is precise but costs more per timeout.
//
// Usage:
//
//	go run ./examples/demo [-n 1000000] [-cancel 0.9] [-min-delay 2s] [-max-delay 4s] [-tick 10ms] ...
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
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// config is the workload and the display, set by flags.
type config struct {
	N          int           // timeouts to schedule
	CancelFrac float64       // fraction of them cancelled before their deadline
	MinDelay   time.Duration // delays are uniform in [MinDelay, MaxDelay)
	MaxDelay   time.Duration
	Tick       time.Duration // the wheel's tick duration
	Wheel      int           // the wheel's ticks per wheel
	Producers  int           // goroutines scheduling and cancelling
	Seed       uint64        // seed of the delays and of the choice of cancelled timeouts
	Compare    bool          // also run the workload on time.AfterFunc
	Progress   time.Duration // between progress updates; 0: 100ms on a terminal, 1s otherwise
	TTY        bool          // rewrite one progress line in place with \r
}

func defaultConfig() config {
	return config{
		N:          1_000_000,
		CancelFrac: 0.9,
		MinDelay:   2 * time.Second,
		MaxDelay:   4 * time.Second,
		Tick:       10 * time.Millisecond,
		Wheel:      512,
		Producers:  runtime.GOMAXPROCS(0),
		Seed:       1,
		Compare:    true,
	}
}

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.N, "n", cfg.N, "number of timeouts to schedule")
	flag.Float64Var(&cfg.CancelFrac, "cancel", cfg.CancelFrac, "fraction of the timeouts cancelled before their deadline")
	flag.DurationVar(&cfg.MinDelay, "min-delay", cfg.MinDelay, "shortest delay")
	flag.DurationVar(&cfg.MaxDelay, "max-delay", cfg.MaxDelay, "longest delay")
	flag.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick duration of the wheel (its resolution)")
	flag.IntVar(&cfg.Wheel, "wheel", cfg.Wheel, "ticks per wheel")
	flag.IntVar(&cfg.Producers, "producers", cfg.Producers, "goroutines scheduling and cancelling timeouts")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed of the workload")
	flag.BoolVar(&cfg.Compare, "compare", cfg.Compare, "also run the workload on time.AfterFunc")
	flag.DurationVar(&cfg.Progress, "progress", 0, "interval between progress updates (default 100ms on a terminal, 1s otherwise)")
	flag.Parse()
	cfg.TTY = isTerminal(os.Stdout)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// isTerminal reports whether f is a character device, such as a terminal,
// rather than a file or a pipe.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// run runs the workload on the wheel and, if cfg.Compare, on
// time.AfterFunc, writing progress and the summary to out. It fails if the
// configuration is invalid, if a timeout fired early or went missing, or if
// ctx ends first.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.Progress <= 0 {
		cfg.Progress = time.Second
		if cfg.TTY {
			cfg.Progress = 100 * time.Millisecond
		}
	}
	w := newWorkload(cfg)
	warmUp(cfg.N)
	fmt.Fprintf(out, "Scheduling %s timeouts with delays spread over %v-%v from %d goroutines;\n",
		commas(int64(cfg.N)), cfg.MinDelay, cfg.MaxDelay, cfg.Producers)
	fmt.Fprintf(out, "%.0f%% are cancelled before their deadline, as a server cancels the deadline of\n"+
		"each request answered in time; the rest fire. hashedwheel tick: %v.\n\n", 100*cfg.CancelFrac, cfg.Tick)

	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(cfg.Tick),
		hashedwheel.WithTicksPerWheel(cfg.Wheel),
	)
	if err != nil {
		return err
	}
	wheelResult, err := runBackend(ctx, cfg, w, out, backend[hashedwheel.Timeout]{
		name:     "hashedwheel",
		label:    "wheel",
		schedule: timer.AfterFunc,
		cancel:   hashedwheel.Timeout.Cancel,
	})
	leftover := timer.Stop()
	if err != nil {
		return err
	}
	stats := timer.Stats()
	results := []result{wheelResult}

	if cfg.Compare {
		r, err := runBackend(ctx, cfg, w, out, backend[*time.Timer]{
			name:  "time.AfterFunc",
			label: "AfterFunc",
			schedule: func(d time.Duration, f func()) (*time.Timer, error) {
				return time.AfterFunc(d, f), nil
			},
			cancel: (*time.Timer).Stop,
		})
		if err != nil {
			return err
		}
		results = append(results, r)
	}

	fmt.Fprintln(out)
	printSummary(out, cfg, results)
	fmt.Fprintf(out, "\nhashedwheel.Stats: scheduled %s, expired %s, cancelled %s, returned by Stop %d;\n"+
		"%s ticks, worst tick lag %v (a tick runs late while the worker moves a burst of\n"+
		"new timeouts into the wheel, or gets no CPU), executor failures %d.\n",
		commas(int64(stats.Scheduled)), commas(int64(stats.Expired)), commas(int64(stats.Cancelled)),
		stats.ReturnedByStop, commas(int64(stats.Ticks)), stats.MaxTickLag.Round(time.Microsecond),
		stats.ExecutorFailures)

	var problems []string
	for _, r := range results {
		if r.early > 0 {
			problems = append(problems, fmt.Sprintf("%s fired %d timeouts early", r.name, r.early))
		}
		if r.fired+r.cancelled != int64(cfg.N) {
			problems = append(problems, fmt.Sprintf("%s: fired %d + cancelled %d != %d",
				r.name, r.fired, r.cancelled, cfg.N))
		}
	}
	if len(leftover) != 0 {
		problems = append(problems, fmt.Sprintf("hashedwheel: Stop returned %d timeouts", len(leftover)))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	fmt.Fprintf(out, "\nok: each of the %s timeouts fired or was cancelled, on every timer run; none fired early.\n",
		commas(int64(cfg.N)))
	return nil
}

func (c config) validate() error {
	switch {
	case c.N < 1:
		return fmt.Errorf("-n %d: want at least 1", c.N)
	case c.CancelFrac < 0 || c.CancelFrac > 1:
		return fmt.Errorf("-cancel %v: want a fraction in [0, 1]", c.CancelFrac)
	case c.MinDelay < 0 || c.MaxDelay < c.MinDelay:
		return fmt.Errorf("-min-delay %v, -max-delay %v: want 0 <= min <= max", c.MinDelay, c.MaxDelay)
	case c.Producers < 1:
		return fmt.Errorf("-producers %d: want at least 1", c.Producers)
	}
	return nil
}

// warmUp grows the heap about as much as a run does and frees it again, so
// that the first timer measured does not pay alone for asking the OS for
// memory: the second would reuse what the first had grown.
func warmUp(n int) {
	junk := make([]*[128]byte, n)
	for i := range junk {
		junk[i] = new([128]byte)
	}
	runtime.KeepAlive(junk)
	junk = nil
	runtime.GC()
}

// workload is the same for both timers: each timeout's delay, and whether
// it is cancelled.
type workload struct {
	delays []time.Duration
	cancel []bool
	toStop int // how many are cancelled
}

func newWorkload(cfg config) *workload {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	w := &workload{delays: make([]time.Duration, cfg.N), cancel: make([]bool, cfg.N)}
	spread := int64(cfg.MaxDelay - cfg.MinDelay)
	for i := range w.delays {
		w.delays[i] = cfg.MinDelay
		if spread > 0 {
			w.delays[i] += time.Duration(rng.Int64N(spread))
		}
		if rng.Float64() < cfg.CancelFrac {
			w.cancel[i] = true
			w.toStop++
		}
	}
	return w
}

// backend is a timer under test; H is its handle.
type backend[H any] struct {
	name     string
	label    string // a short name for the progress line
	schedule func(d time.Duration, f func()) (H, error)
	cancel   func(H) bool
}

// result is what one run measured.
type result struct {
	name            string
	scheduleTime    time.Duration // to schedule every timeout
	cancelTime      time.Duration // to cancel the chosen ones
	cancelCalls     int
	totalTime       time.Duration // from the first schedule to the last firing
	fired           int64
	cancelled       int64
	early           int64
	p50, p99, max   time.Duration // firing lateness
	bytesPerPending float64
}

// runState is shared by the producers, the firing timeouts and the
// progress line of one run.
type runState struct {
	start     time.Time
	want      []time.Duration // each timeout's deadline, after start
	lateness  []time.Duration // of the fired timeouts, in firing order
	fired     atomic.Int64
	cancelled atomic.Int64
	scheduled atomic.Int64
	early     atomic.Int64
	worst     atomic.Int64  // the worst lateness so far
	remaining atomic.Int64  // neither fired nor cancelled
	done      chan struct{} // closed when remaining reaches 0
}

// fire is the task of timeout i: it measures how late it runs.
func (s *runState) fire(i int) {
	late := time.Since(s.start) - s.want[i]
	if late < 0 {
		s.early.Add(1)
	}
	s.lateness[s.fired.Add(1)-1] = late
	for {
		w := s.worst.Load()
		if int64(late) <= w || s.worst.CompareAndSwap(w, int64(late)) {
			break
		}
	}
	s.finish()
}

func (s *runState) finish() {
	if s.remaining.Add(-1) == 0 {
		close(s.done)
	}
}

// runBackend runs the workload on one timer: schedule everything, measure
// the heap, cancel the chosen timeouts, and wait for the others to fire.
func runBackend[H any](ctx context.Context, cfg config, w *workload, out io.Writer, b backend[H]) (result, error) {
	n := cfg.N
	// Everything the run itself needs is allocated before the heap is
	// measured, so that the difference is the timer's own memory.
	handles := make([]H, n)
	s := &runState{
		want:     make([]time.Duration, n),
		lateness: make([]time.Duration, n),
		done:     make(chan struct{}),
	}
	s.remaining.Store(int64(n))
	heapBefore := heapInUse()

	s.start = time.Now()
	prog := startProgress(cfg, out, b.label, s)
	defer prog.stop()

	var (
		failOnce sync.Once
		failed   error
	)
	parallel(cfg.Producers, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			// The wanted deadline is taken before the timer takes its own,
			// so a timeout that fires before it really is early.
			s.want[i] = time.Since(s.start) + w.delays[i]
			h, err := b.schedule(w.delays[i], func() { s.fire(i) })
			if err != nil {
				failOnce.Do(func() { failed = err })
				return
			}
			handles[i] = h
			s.scheduled.Add(1)
		}
	})
	r := result{name: b.name, scheduleTime: time.Since(s.start)}
	if failed != nil {
		return r, fmt.Errorf("%s: schedule: %w", b.name, failed)
	}
	pending := int64(n) - s.fired.Load()
	heapAfter := heapInUse()
	if pending > 0 && heapAfter > heapBefore {
		r.bytesPerPending = float64(heapAfter-heapBefore) / float64(pending)
	}

	cancelStart := time.Now()
	parallel(cfg.Producers, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if !w.cancel[i] {
				continue
			}
			// False means the timeout fired first: its request timed out.
			if b.cancel(handles[i]) {
				s.cancelled.Add(1)
				s.finish()
			}
		}
	})
	r.cancelTime = time.Since(cancelStart)
	r.cancelCalls = w.toStop

	select {
	case <-s.done:
	case <-ctx.Done():
		return r, ctx.Err()
	}
	r.totalTime = time.Since(s.start)
	prog.stop()

	r.fired, r.cancelled, r.early = s.fired.Load(), s.cancelled.Load(), s.early.Load()
	late := s.lateness[:r.fired]
	slices.Sort(late)
	if len(late) > 0 {
		r.p50 = late[len(late)/2]
		r.p99 = late[len(late)*99/100]
		r.max = late[len(late)-1]
	}
	runtime.KeepAlive(handles)
	return r, nil
}

// parallel splits [0, n) into p contiguous parts and runs f on each in a
// goroutine of its own, returning when all are done.
func parallel(p, n int, f func(lo, hi int)) {
	var wg sync.WaitGroup
	for k := range p {
		lo, hi := n*k/p, n*(k+1)/p
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// progress prints a line of the run's counts every cfg.Progress: rewritten
// in place on a terminal, one line each time otherwise.
type progress struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

func startProgress(cfg config, out io.Writer, label string, s *runState) *progress {
	p := &progress{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ticker := time.NewTicker(cfg.Progress)
		defer ticker.Stop()
		last, lastEvents, width := time.Now(), int64(0), 0
		show := func(final bool) {
			now := time.Now()
			fired, cancelled := s.fired.Load(), s.cancelled.Load()
			events := s.scheduled.Load() + fired + cancelled
			rate := float64(events-lastEvents) / now.Sub(last).Seconds()
			if final {
				rate = float64(events) / now.Sub(s.start).Seconds()
			}
			last, lastEvents = now, events
			// At most 79 columns, so that \r rewrites it on an 80-column terminal.
			line := fmt.Sprintf("%-9s pending %5s fired %5s cancelled %5s rate %7s worst %6s",
				label, si(s.scheduled.Load()-fired-cancelled), si(fired), si(cancelled),
				si(int64(rate))+"/s", worst(time.Duration(s.worst.Load())))
			if !cfg.TTY {
				fmt.Fprintln(out, line)
				return
			}
			pad := max(width-len(line), 0)
			width = len(line)
			fmt.Fprintf(out, "\r%s%s", line, strings.Repeat(" ", pad))
			if final {
				fmt.Fprintln(out)
			}
		}
		for {
			select {
			case <-ticker.C:
				show(false)
			case <-p.quit:
				show(true)
				return
			}
		}
	}()
	return p
}

// stop prints the last line, with the average rate, and returns once the
// progress goroutine has exited. It may be called more than once.
func (p *progress) stop() {
	p.once.Do(func() { close(p.quit) })
	<-p.done
}

func printSummary(out io.Writer, cfg config, rs []result) {
	row := func(label string, cells ...string) {
		fmt.Fprintf(out, "%-28s", label)
		for i, c := range cells {
			if i < len(rs) {
				fmt.Fprintf(out, " %16s", c)
			} else {
				fmt.Fprintf(out, "   %s", c)
			}
		}
		fmt.Fprintln(out)
	}
	cells := func(f func(r result) string) []string {
		var c []string
		for _, r := range rs {
			c = append(c, f(r))
		}
		return c
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	row("", names...)
	// ratio compares the wheel, rs[0], with time.AfterFunc, rs[1].
	ratio := func(f func(result) float64, higherBetter bool, better, worse string) []string {
		if len(rs) < 2 {
			return nil
		}
		a, b := f(rs[0]), f(rs[1])
		if a <= 0 || b <= 0 {
			return nil
		}
		x := a / b
		if !higherBetter {
			x = b / a
		}
		if x >= 1 {
			return []string{fmt.Sprintf("%.1fx %s", x, better)}
		}
		return []string{fmt.Sprintf("%.1fx %s", 1/x, worse)}
	}
	scheduleRate := func(r result) float64 { return float64(cfg.N) / r.scheduleTime.Seconds() }
	cancelRate := func(r result) float64 { return float64(r.cancelCalls) / r.cancelTime.Seconds() }
	bytes := func(r result) float64 { return r.bytesPerPending }

	row("schedule rate", append(cells(func(r result) string { return si(int64(scheduleRate(r))) + "/s" }),
		ratio(scheduleRate, true, "faster", "slower")...)...)
	row("cancel rate", append(cells(func(r result) string { return si(int64(cancelRate(r))) + "/s" }),
		ratio(cancelRate, true, "faster", "slower")...)...)
	row("memory per timeout + func", append(cells(func(r result) string { return fmt.Sprintf("%.0f B", r.bytesPerPending) }),
		ratio(bytes, false, "less", "more")...)...)
	row("fired / cancelled", cells(func(r result) string {
		return si(r.fired) + " / " + si(r.cancelled)
	})...)
	row("firing lateness p50", cells(func(r result) string { return fmtDur(r.p50) })...)
	row("firing lateness p99", cells(func(r result) string { return fmtDur(r.p99) })...)
	row("firing lateness max", cells(func(r result) string { return fmtDur(r.max) })...)
	row("fired early", cells(func(r result) string {
		if r.early == 0 {
			return "none"
		}
		return commas(r.early) + " (BUG)"
	})...)
	row("wall time", cells(func(r result) string { return r.totalTime.Round(10 * time.Millisecond).String() })...)
	fmt.Fprintf(out, "\nThe wheel fires a timeout on the first tick that ends after its deadline, so it\n"+
		"is up to one tick (%v) late by design; a timer heap is precise but costs more.\n", cfg.Tick)
}

// worst formats the worst lateness so far; none before the first firing.
func worst(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmtDur(d)
}

// si formats n with a k or M suffix and three significant digits.
func si(n int64) string {
	f := float64(n)
	switch {
	case n < 0:
		return "-" + si(-n)
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return trim3(f/1e3) + "k"
	case n < 1_000_000_000:
		return trim3(f/1e6) + "M"
	}
	return trim3(f/1e9) + "G"
}

// trim3 formats f (in [1, 1000)) with three significant digits.
func trim3(f float64) string {
	switch {
	case f < 10:
		return fmt.Sprintf("%.2f", f)
	case f < 100:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.0f", f)
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtDur formats a duration with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return trim3(float64(d)/1e3) + "µs"
	case d < time.Second:
		return trim3(float64(d)/1e6) + "ms"
	}
	return trim3(float64(d)/1e9) + "s"
}
