package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// priceCache stands for what a server reloads from its database on a
// schedule: Refresh counts the loads and notes the time of the last.
type priceCache struct {
	now func() time.Time

	mu       sync.Mutex
	loads    int
	loadedAt time.Time
}

func newPriceCache(now func() time.Time) *priceCache { return &priceCache{now: now} }

// Refresh reloads the cache.
func (c *priceCache) Refresh() {
	at := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	c.loadedAt = at
}

// Loads returns how many times the cache was loaded, and when last.
func (c *priceCache) Loads() (n int, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads, c.loadedAt
}

// shop is a server's scheduled jobs: the price cache it refreshes, a
// nightly report, payment reminders sent a few times at most, and the sale
// prices it pushes to a marketplace until the sale ends. Each job prints a
// line as it runs; the jobs may run on several goroutines at once.
type shop struct {
	cache   *priceCache
	now     func() time.Time
	loc     *time.Location
	verbose bool // a line per cache refresh too

	mu         sync.Mutex // guards out and the counts
	out        io.Writer
	reportedAt int // cache loads counted by the last report
	reminders  int
	pushes     int
}

func newShop(now func() time.Time, loc *time.Location, out io.Writer, verbose bool) *shop {
	return &shop{cache: newPriceCache(now), now: now, loc: loc, out: out, verbose: verbose}
}

// printf writes one line, prefixed with the time in the shop's zone to the
// millisecond, which shows how long after its time a job ran.
func (s *shop) printf(format string, args ...any) {
	fmt.Fprintf(s.out, "%s  %s\n", s.now().In(s.loc).Format(runLayout), fmt.Sprintf(format, args...))
}

// scheduleLayout is how the program prints the time a schedule gives, as a
// cron expression reads it; runLayout the time a job ran.
const (
	scheduleLayout = "Mon 02 Jan 15:04:05"
	runLayout      = "Mon 02 Jan 15:04:05.000"
)

// refreshCache is the cache job.
func (s *shop) refreshCache() {
	s.cache.Refresh()
	if s.verbose {
		n, _ := s.cache.Loads()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.printf("price cache loaded (%d)", n)
	}
}

// nightlyReport is the report job: what the other jobs did since the
// previous report.
func (s *shop) nightlyReport() {
	loads, last := s.cache.Loads()
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("nightly report: price cache loaded %d times", loads-s.reportedAt)
	if loads > s.reportedAt {
		line += " (last at " + last.In(s.loc).Format("15:04:05.000") + ")"
	}
	s.printf("%s; reminders sent: %d; price pushes: %d", line, s.reminders, s.pushes)
	s.reportedAt = loads
}

// sendReminder is the payment reminder job, on a schedule that ends after
// a few runs.
func (s *shop) sendReminder() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reminders++
	s.printf("payment reminder %d sent for invoice 1042", s.reminders)
}

// pushSalePrices is the marketplace job, on a schedule that ends with the
// sale.
func (s *shop) pushSalePrices() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushes++
	s.printf("sale prices pushed to the marketplace (%d)", s.pushes)
}
