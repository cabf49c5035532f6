// Command cron runs a server's scheduled jobs on a timing wheel, each on a
// cron expression parsed by github.com/robfig/cron/v3, whose Schedule is a
// hashedwheel.Scheduler:
//
//   - the price cache is reloaded every 15 minutes during business hours
//     (-refresh "*/15 9-17 * * MON-FRI");
//   - a report is written every night (-report "0 2 * * *");
//   - a payment reminder goes out at 10:00 on weekdays, 3 times at most
//     (-remind, -reminders): a Scheduler that ends after a number of runs;
//   - sale prices are pushed to a marketplace until the sale ends (-sale,
//     -sale-for): a Scheduler that ends at a deadline.
//
// Cron expressions are read in the zone -tz names, unless one carries its
// own CRON_TZ= prefix. By default the program drives a fake clock through
// a week, from Monday 2 March 2026, in about a second; -fake=false runs the
// jobs on the wall clock until interrupted.
//
//	cd examples/cron && go run . [-tz Asia/Tokyo] [-days 7] [-v] [-fake=false]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
	_ "time/tzdata" // -tz works on machines without a zone database

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the program with the given arguments and returns its exit
// code.
func realMain(args []string, stdout, stderr io.Writer) int {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("cron", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Refresh, "refresh", cfg.Refresh, "cron expression of the price cache refresh")
	fs.StringVar(&cfg.Report, "report", cfg.Report, "cron expression of the nightly report")
	fs.StringVar(&cfg.Remind, "remind", cfg.Remind, "cron expression of the payment reminders")
	fs.IntVar(&cfg.Reminders, "reminders", cfg.Reminders, "payment reminders to send at most")
	fs.StringVar(&cfg.Sale, "sale", cfg.Sale, "cron expression of the sale price pushes")
	fs.DurationVar(&cfg.SaleFor, "sale-for", cfg.SaleFor, "the sale, and its price pushes, end this long after the start")
	fs.StringVar(&cfg.TZ, "tz", cfg.TZ, "time zone the cron expressions are read in (IANA name, UTC or Local), unless one starts with CRON_TZ=")
	fs.BoolVar(&cfg.Fake, "fake", cfg.Fake, "drive a fake clock through -days days, a week in about a second; -fake=false runs on the wall clock until interrupted")
	fs.IntVar(&cfg.Days, "days", cfg.Days, "days the fake clock goes through")
	fs.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick of the timing wheel: a job starts up to a tick after its time, never before")
	fs.BoolVar(&cfg.Verbose, "v", cfg.Verbose, "print a line per cache refresh too")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cron: unexpected arguments %q: quote a cron expression given to a flag\n", fs.Args())
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(ctx, cfg, stdout, log); err != nil {
		fmt.Fprintln(stderr, "cron:", err)
		return 1
	}
	return 0
}

// config is what the flags set.
type config struct {
	Refresh, Report, Remind, Sale string // cron expressions
	Reminders                     int
	SaleFor                       time.Duration
	TZ                            string
	Fake                          bool
	Days                          int
	Pace                          time.Duration // real time per simulated hour, with Fake
	Tick                          time.Duration
	Verbose                       bool
}

func defaultConfig() config {
	return config{
		Refresh:   "*/15 9-17 * * MON-FRI",
		Report:    "0 2 * * *",
		Remind:    "0 10 * * MON-FRI",
		Reminders: 3,
		Sale:      "30 8,18 * * *",
		SaleFor:   60 * time.Hour,
		TZ:        "UTC",
		Fake:      true,
		Days:      7,
		Pace:      time.Second / (7 * 24),
		Tick:      hashedwheel.MinTickDuration,
	}
}

// fakeStart is where the fake clock starts: a Monday, at midnight in loc.
func fakeStart(loc *time.Location) time.Time { return time.Date(2026, time.March, 2, 0, 0, 0, 0, loc) }

// job is a scheduled job: what it does, on which schedule, and its runs.
type job struct {
	name    string
	expr    string
	comment string // how its schedule ends, if it does
	s       hashedwheel.Scheduler
	f       func()
	runs    atomic.Int64
	timeout hashedwheel.Timeout
}

// run parses the schedules, runs the jobs on a timer until the fake clock
// has gone through cfg.Days days or, on the wall clock, until ctx is done,
// then stops the timer and prints what ran.
func run(ctx context.Context, cfg config, out io.Writer, log *slog.Logger) error {
	loc, err := time.LoadLocation(cfg.TZ)
	if err != nil {
		return fmt.Errorf("-tz: %w", err)
	}
	switch {
	case cfg.Reminders < 1:
		return fmt.Errorf("-reminders %d: expected at least 1", cfg.Reminders)
	case cfg.SaleFor <= 0:
		return fmt.Errorf("-sale-for %v: expected a duration above zero", cfg.SaleFor)
	case cfg.Fake && cfg.Days < 1:
		return fmt.Errorf("-days %d: expected at least 1", cfg.Days)
	}
	refresh, errRefresh := parseSchedule(cfg.Refresh, loc)
	report, errReport := parseSchedule(cfg.Report, loc)
	remind, errRemind := parseSchedule(cfg.Remind, loc)
	sale, errSale := parseSchedule(cfg.Sale, loc)
	if err := errors.Join(errRefresh, errReport, errRemind, errSale); err != nil {
		return err
	}

	var clk clock.Clock = clock.NewReal()
	var fake *clock.Fake
	if cfg.Fake {
		fake = clock.NewFake(fakeStart(loc))
		clk = fake
	}
	timer, err := hashedwheel.New(hashedwheel.WithClock(clk), hashedwheel.WithTickDuration(cfg.Tick), hashedwheel.WithLogger(log))
	if err != nil {
		return err
	}
	start := clk.Now()
	saleEnds := start.Add(cfg.SaleFor)
	s := newShop(clk.Now, loc, out, cfg.Verbose)
	jobs := []*job{
		{name: "price cache", expr: cfg.Refresh, s: refresh, f: s.refreshCache},
		{name: "report", expr: cfg.Report, s: report, f: s.nightlyReport},
		{name: "reminders", expr: cfg.Remind, s: limitRuns(remind, cfg.Reminders),
			comment: fmt.Sprintf(", %d times at most", cfg.Reminders), f: s.sendReminder},
		{name: "sale prices", expr: cfg.Sale, s: untilDeadline(sale, saleEnds),
			comment: ", until " + saleEnds.In(loc).Format(scheduleLayout), f: s.pushSalePrices},
	}
	for _, j := range jobs {
		j.timeout, err = timer.ScheduleFunc(j.s, func() { j.runs.Add(1); j.f() })
		if err != nil {
			timer.Stop()
			return fmt.Errorf("%s %q: %w", j.name, j.expr, err)
		}
	}

	if cfg.Fake {
		fmt.Fprintf(out, "On a fake clock from %s, %d days, times in %s:\n", start.Format(scheduleLayout), cfg.Days, loc)
	} else {
		fmt.Fprintf(out, "On the wall clock from %s until interrupted, times in %s:\n", start.In(loc).Format(scheduleLayout), loc)
	}
	for _, j := range jobs {
		fmt.Fprintf(out, "  %-12s %-24q first at %s%s\n", j.name, j.expr, j.timeout.Deadline().In(loc).Format(scheduleLayout), j.comment)
	}

	if cfg.Fake {
		driveFake(ctx, fake, cfg.Days*24, cfg.Pace)
	} else {
		<-ctx.Done()
	}

	fmt.Fprintln(out, "Stopping:")
	for _, j := range jobs {
		state := "next at " + j.timeout.Deadline().In(loc).Format(scheduleLayout)
		if j.timeout.IsExpired() {
			state = "its schedule ended"
		}
		fmt.Fprintf(out, "  %-12s ran %3d times, %s\n", j.name, j.runs.Load(), state)
	}
	live := timer.Stop()
	fmt.Fprintf(out, "Stop returned %d live schedules; %v\n", len(live), timer.Stats())
	return nil
}

// driveFake advances the fake clock an hour at a time, pace apart in real
// time, until it has gone through the hours or ctx is done. Each Advance
// returns once every job due by then has run.
func driveFake(ctx context.Context, fake *clock.Fake, hours int, pace time.Duration) {
	wait := time.NewTimer(0)
	defer wait.Stop()
	for range hours {
		fake.Advance(time.Hour)
		if pace > 0 {
			wait.Reset(pace)
			select {
			case <-ctx.Done():
				return
			case <-wait.C:
			}
		} else if ctx.Err() != nil {
			return
		}
	}
}
