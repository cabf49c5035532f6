// Command demo is what `make demo` runs: it shows in about ten seconds what
// the hashed wheel timer does and what it costs beside the Go runtime's
// timers, and says which machine the figures come from.
//
// First it measures what the README compares, as `make bench-core` does:
// schedule + cancel on one goroutine and on every processor beside
// time.AfterFunc + Stop, and a request context made and cancelled beside
// context.WithTimeout, in several alternating rounds, reporting the median
// and the fastest and slowest round. A comparison whose rounds on either
// side lie more than three times apart is reported as void, not as a ratio.
//
// Then it schedules a million timeouts with delays spread over a few
// seconds, cancels most of them, as a server cancels the deadline of each
// request that is answered in time, and lets the rest fire, once on the
// wheel and once on time.AfterFunc. A progress line shows the pending,
// fired and cancelled counts; it prints no rate or lateness, which would
// be figures of a moment (the first second is the workload's own burst of
// scheduling and cancelling, the same on both timers). The summary sets
// side by side what was measured over each whole run: how much memory
// each pending timeout holds and how late the timeouts fire (p50, p99,
// max; never early). A
// timer that fired more than 1% of the timeouts it was to cancel, or whose
// tasks ran a median of more than 100ms past their deadline and its
// resolution, had too little CPU to be compared: its run is void, and no
// ratio is printed for it. The workload's own scheduling and
// cancelling are not compared: each is a single phase of a few hundred
// milliseconds that shares the processors with the wheel's worker and the
// collector, and on a 2-core machine its time moves by a factor of two or
// three from one run to the next.
//
// The wheel trades precision for cost: it fires a timeout on the first tick
// after its deadline, so it is up to one tick late by design, where
// time.AfterFunc is precise but costs more per timeout.
//
// Usage:
//
//	go run ./examples/demo [-rounds 5] [-ops 200000] [-n 1000000] [-cancel 0.9] [-min-delay 2s] [-max-delay 3s] [-tick 10ms] ...
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
	"github.com/wheeltimer/wheeltimer/internal/lateness"
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
	Rounds     int           // rounds of the cost measurement; 0 skips it
	CostOps    int           // operations per block of the cost measurement
	Progress   time.Duration // between progress updates; 0: 100ms on a terminal, 1s otherwise
	TTY        bool          // rewrite one progress line in place with \r
}

func defaultConfig() config {
	return config{
		N:          1_000_000,
		CancelFrac: 0.9,
		MinDelay:   2 * time.Second,
		MaxDelay:   3 * time.Second,
		Tick:       10 * time.Millisecond,
		Wheel:      512,
		Producers:  runtime.GOMAXPROCS(0),
		Seed:       1,
		Compare:    true,
		Rounds:     5,
		CostOps:    200_000,
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
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds of the cost measurement (0 skips it)")
	flag.IntVar(&cfg.CostOps, "ops", cfg.CostOps, "operations per block of the cost measurement")
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

// run measures the cost per operation, unless cfg.Rounds is 0, then runs
// the workload on the wheel and, if cfg.Compare, on time.AfterFunc, writing
// progress and the summaries to out. It fails if the configuration is
// invalid, if a timeout fired early or went missing, or if ctx ends first.
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
	fmt.Fprintf(out, "Machine: %s.\n\n", machine())
	newTimer := func() (*hashedwheel.HashedWheelTimer, error) {
		return hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick), hashedwheel.WithTicksPerWheel(cfg.Wheel))
	}
	if cfg.Rounds > 0 {
		timer, err := newTimer()
		if err != nil {
			return err
		}
		costs := measureCosts(timer, cfg.Rounds, cfg.CostOps)
		timer.Stop()
		printCost(out, costs)
		fmt.Fprintln(out)
	}

	w := newWorkload(cfg)
	warmUp(cfg.N)
	fmt.Fprintf(out, "Scheduling %s timeouts with delays spread over %v-%v from %d goroutines;\n",
		commas(int64(cfg.N)), cfg.MinDelay, cfg.MaxDelay, cfg.Producers)
	fmt.Fprintf(out, "%.0f%% are cancelled before their deadline, as a server cancels the deadline of\n"+
		"each request answered in time; the rest fire. One run on each timer;\nhashedwheel tick: %v.\n\n",
		100*cfg.CancelFrac, cfg.Tick)

	timer, err := newTimer()
	if err != nil {
		return err
	}
	wheelResult, err := runBackend(ctx, cfg, w, out, backend[hashedwheel.Timeout]{
		name:       "hashedwheel",
		label:      "wheel",
		resolution: cfg.Tick,
		schedule:   timer.AfterFunc,
		cancel:     hashedwheel.Timeout.Cancel,
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
	case c.Rounds < 0:
		return fmt.Errorf("-rounds %d: want 0 or more", c.Rounds)
	case c.Rounds > 0 && c.CostOps < 1:
		return fmt.Errorf("-ops %d: want at least 1", c.CostOps)
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
	name       string
	label      string        // a short name for the progress line
	resolution time.Duration // how late the timer fires by design
	schedule   func(d time.Duration, f func()) (H, error)
	cancel     func(H) bool
}

// result is what one run measured.
type result struct {
	name            string
	resolution      time.Duration
	totalTime       time.Duration // from the first schedule to the last firing
	fired           int64
	cancelled       int64
	toCancel        int64 // how many the workload chose to cancel
	early           int64
	p50, p99, max   time.Duration // firing lateness
	bytesPerPending float64
}

// voidLateness is how far past its deadline and its resolution a timer's
// median task may run before its run is void: that late, the timer did not
// get the CPU it needed, and the figures describe the machine, not it.
const voidLateness = 100 * time.Millisecond

// voidMissed is the share of the timeouts chosen to be cancelled that may
// fire first before the run is void: the timer then ran another workload,
// because scheduling and cancelling took longer than the shortest delay.
const voidMissed = 0.01

// void returns why the run cannot be compared with another, or "".
func (r result) void() string {
	if missed := r.toCancel - r.cancelled; float64(missed) > voidMissed*float64(r.toCancel) {
		return fmt.Sprintf("%s: %s of the %s timeouts to cancel fired first, scheduling and\n"+
			"cancelling having taken longer than the shortest delay", r.name, commas(missed), commas(r.toCancel))
	}
	if r.fired > 0 && r.p50 > r.resolution+voidLateness {
		return fmt.Sprintf("%s's tasks ran a median of %s late, more than %v past its resolution",
			r.name, fmtDur(r.p50), voidLateness)
	}
	return ""
}

// runState is shared by the producers, the firing timeouts and the
// progress line of one run. The firing tasks share no write: each records
// its lateness into a buffer of its own goroutine's (late), from which
// fired and worst are read, and the early ones are counted afterwards.
type runState struct {
	start     time.Time
	want      []time.Duration    // each timeout's deadline, after start
	late      *lateness.Recorder // of the fired timeouts
	fired     firedCount
	worst     worstLateness
	cancelled atomic.Int64
	scheduled atomic.Int64
}

// firedCount reads how many timeouts have fired from the lateness
// recorded so far.
type firedCount struct{ late *lateness.Recorder }

func (f firedCount) Load() int64 { return f.late.Count() }

// worstLateness reads the worst lateness recorded so far, 0 before the
// first firing or while every timeout fired early.
type worstLateness struct{ late *lateness.Recorder }

func (w worstLateness) Load() int64 {
	d, _ := w.late.Max()
	return int64(max(d, 0))
}

// fire is the task of timeout i: it records how late it runs, negative
// if early.
func (s *runState) fire(i int) {
	s.late.Record(time.Since(s.start) - s.want[i])
}

// runBackend runs the workload on one timer: schedule everything, measure
// the heap, cancel the chosen timeouts, and wait for the others to fire.
func runBackend[H any](ctx context.Context, cfg config, w *workload, out io.Writer, b backend[H]) (result, error) {
	n := cfg.N
	// Everything the run itself needs, each timeout's func included, is
	// allocated before the heap is measured, so that the difference is the
	// timer's own memory.
	handles := make([]H, n)
	rec := lateness.New()
	defer rec.Release() // also when the run ends early
	s := &runState{
		want:  make([]time.Duration, n),
		late:  rec,
		fired: firedCount{rec},
		worst: worstLateness{rec},
	}
	tasks := make([]func(), n)
	for i := range tasks {
		tasks[i] = func() { s.fire(i) }
	}
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
			h, err := b.schedule(w.delays[i], tasks[i])
			if err != nil {
				failOnce.Do(func() { failed = err })
				return
			}
			handles[i] = h
			s.scheduled.Add(1)
		}
	})
	r := result{name: b.name, resolution: b.resolution, toCancel: int64(w.toStop)}
	if failed != nil {
		return r, fmt.Errorf("%s: schedule: %w", b.name, failed)
	}
	// handles keeps every timeout made reachable, fired or not: the growth
	// is theirs, so it is divided by all n, not by those still pending,
	// which would count a fired one's bytes against the others.
	heapAfter := heapInUse()
	if heapAfter > heapBefore {
		r.bytesPerPending = float64(heapAfter-heapBefore) / float64(n)
	}

	parallel(cfg.Producers, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if !w.cancel[i] {
				continue
			}
			// False means the timeout fired first: its request timed out.
			if b.cancel(handles[i]) {
				s.cancelled.Add(1)
			}
		}
	})

	// Every timeout not cancelled fires: wait for their records.
	if !s.late.Wait(ctx, int64(n)-s.cancelled.Load()) {
		return r, ctx.Err()
	}
	r.totalTime = time.Since(s.start)
	prog.stop()

	r.fired, r.cancelled = s.fired.Load(), s.cancelled.Load()
	late := s.late.Sorted()
	early, _ := slices.BinarySearch(late, 0) // the lateness below 0
	r.early = int64(early)
	if len(late) > 0 {
		r.p50 = late[len(late)/2]
		r.p99 = late[len(late)*99/100]
		r.max = late[len(late)-1]
	}
	runtime.KeepAlive(handles)
	runtime.KeepAlive(tasks)
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

// heapInUse returns the bytes of live heap objects after two full
// collections: the first moves what sync.Pools hold (per processor, so more
// on more processors) to their victim caches, the second frees it, so that
// the pools of earlier work are counted neither before a run nor after.
func heapInUse() uint64 {
	runtime.GC()
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
		width := 0
		show := func(final bool) {
			fired, cancelled := s.fired.Load(), s.cancelled.Load()
			// Counts only: a rate or a lateness of the moment describes the
			// workload's phase, not the timer (the summary has the run's).
			line := fmt.Sprintf("%-9s pending %5s fired %5s cancelled %5s",
				label, si(s.scheduled.Load()-fired-cancelled), si(fired), si(cancelled))
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

// stop prints the last line and returns once the
// progress goroutine has exited. It may be called more than once.
func (p *progress) stop() {
	p.once.Do(func() { close(p.quit) })
	<-p.done
}

// printSummary sets the runs side by side. The memory of the wheel, rs[0],
// is compared with time.AfterFunc's, rs[1], unless either run is void.
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
	var voids []string
	for _, r := range rs {
		if why := r.void(); why != "" {
			voids = append(voids, why)
		}
	}
	row("", cells(func(r result) string { return r.name })...)
	memory := cells(func(r result) string { return fmt.Sprintf("%.0f B", r.bytesPerPending) })
	if len(rs) > 1 && len(voids) == 0 && rs[0].bytesPerPending > 0 && rs[1].bytesPerPending > 0 {
		memory = append(memory, fmt.Sprintf("%.2fx", rs[0].bytesPerPending/rs[1].bytesPerPending))
	}
	row("memory per pending timeout", memory...)
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
	for _, why := range voids {
		fmt.Fprintf(out, "void: %s;\nthe machine was too busy for this run to be compared.\n", why)
	}
	fmt.Fprintf(out, "\nThe wheel fires a timeout on the first tick that ends after its deadline, so it\n"+
		"is up to one tick (%v) late by design, plus however long its worker and the\n"+
		"task wait for a processor; a timer heap is precise but costs more.\n", cfg.Tick)
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
