// Command sessioncache shows a session store whose sessions end after a
// time to live without a read, the job of keyed.Timers: one deadline per
// key, found by the key.
//
// The store keeps each session in a keyed.Timers under its ID, with a
// deadline -ttl away. Every read of a session moves its deadline to -ttl
// from now (Move returns the session and pushes its expiry back in one
// call), so only a session left unread for -ttl expires, and its expiry
// function logs the user out. Logging out removes the session: its expiry
// never runs.
//
// -users users log in. A fraction -active of them read their session every
// -interval for -duration, then stop; a fraction -logout log out at once;
// the others never come back. The report says which sessions expired (the
// idle ones during the run, the active ones only after they stopped, never
// a logged-out one), how long after its last read each expired (never less
// than -ttl, about a tick more), and that no read of a live session missed.
//
//	go run ./examples/sessioncache [-users 5000] [-active 0.5] [-logout 0.1] [-ttl 1s] [-interval 200ms] [-duration 2s]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/keyed"
)

// Session is what the store keeps for a logged-in user.
type Session struct {
	User string
	// lastRead is the store's clock at the last read that moved the
	// deadline: the expiry comes no sooner than lastRead + ttl.
	lastRead atomic.Int64
}

// Store is a session store whose sessions expire after ttl without a read.
// Its methods are safe for concurrent use.
type Store struct {
	sessions *keyed.Timers[string, *Session]
	ttl      time.Duration
	now      func() time.Duration // the store's clock, for lastRead
}

// NewStore returns an empty store on timer, whose sessions expire ttl
// after their last read; expired is called with each one that does.
func NewStore(timer hashedwheel.Timer, ttl time.Duration, now func() time.Duration, expired func(id string, s *Session)) (*Store, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("sessioncache: ttl %v must be positive", ttl)
	}
	sessions, err := keyed.New(timer, expired)
	if err != nil {
		return nil, err
	}
	return &Store{sessions: sessions, ttl: ttl, now: now}, nil
}

// Login starts a session for user and returns its ID.
func (s *Store) Login(user string) (string, error) {
	id := newID()
	session := &Session{User: user}
	session.lastRead.Store(int64(s.now()))
	if err := s.sessions.Set(id, session, s.ttl); err != nil {
		return "", err
	}
	return id, nil
}

// Get returns the session with the given ID, and pushes its expiry back to
// ttl from now; false if there is none, or it has expired.
func (s *Store) Get(id string) (*Session, bool) {
	now := s.now()
	session, ok := s.sessions.Move(id, s.ttl)
	if ok {
		// Stored after Move: the expiry, which cannot come before the new
		// deadline, never sees a last read older than the one that moved it.
		session.lastRead.Store(int64(now))
	}
	return session, ok
}

// Logout ends the session with the given ID; false if there is none.
func (s *Store) Logout(id string) bool {
	_, ok := s.sessions.Remove(id)
	return ok
}

// Len returns the number of live sessions.
func (s *Store) Len() int { return s.sessions.Len() }

// newID returns a random session ID.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

type config struct {
	Users    int
	Active   float64       // fraction of the users that read their session every Interval for Duration
	Logout   float64       // fraction of the users that log out at once
	TTL      time.Duration // a session unread for this long expires
	Interval time.Duration // between the reads of an active user
	Duration time.Duration // how long the active users keep reading
	Tick     time.Duration // the timer's tick
}

func defaultConfig() config {
	return config{
		Users:    5000,
		Active:   0.5,
		Logout:   0.1,
		TTL:      time.Second,
		Interval: 200 * time.Millisecond,
		Duration: 2 * time.Second,
		Tick:     10 * time.Millisecond,
	}
}

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.Users, "users", cfg.Users, "users that log in")
	flag.Float64Var(&cfg.Active, "active", cfg.Active, "fraction of the users that keep reading their session")
	flag.Float64Var(&cfg.Logout, "logout", cfg.Logout, "fraction of the users that log out at once")
	flag.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "a session unread for this long expires")
	flag.DurationVar(&cfg.Interval, "interval", cfg.Interval, "time between the reads of an active user")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long the active users keep reading")
	flag.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick duration of the timer")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessioncache:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, cfg)
	if err := r.check(); err != nil {
		fmt.Fprintln(os.Stderr, "sessioncache:", err)
		os.Exit(1)
	}
}

// kind is what a user does after logging in.
type kind int

const (
	idle   kind = iota // never comes back
	active             // reads the session every interval for the duration
	gone               // logs out at once
)

// report is what a run observed.
type report struct {
	Users         [3]int // by kind
	Reads         int64  // reads of active users while they were active
	Missed        int64  // of them, reads that found no session
	LogoutsFailed int64  // logouts that found no session
	// Expired counts the sessions that expired, by kind; ExpiredEarly the
	// active ones that expired while their user was still reading.
	Expired      [3]int
	ExpiredEarly int
	// Lateness is, for each expiry, its time less the last read's and the
	// TTL: never negative.
	Lateness []time.Duration
	Leftover int // sessions still live at the end
}

// check reports what went wrong, if anything.
func (r *report) check() error {
	var errs []error
	if r.Expired[idle] != r.Users[idle] {
		errs = append(errs, fmt.Errorf("%d of %d idle sessions expired", r.Expired[idle], r.Users[idle]))
	}
	if r.Expired[active] != r.Users[active] {
		errs = append(errs, fmt.Errorf("%d of %d active sessions expired once their users stopped", r.Expired[active], r.Users[active]))
	}
	if r.ExpiredEarly != 0 {
		errs = append(errs, fmt.Errorf("%d sessions expired while their users were reading them", r.ExpiredEarly))
	}
	if r.Expired[gone] != 0 {
		errs = append(errs, fmt.Errorf("%d logged-out sessions expired", r.Expired[gone]))
	}
	if r.Missed != 0 || r.LogoutsFailed != 0 {
		errs = append(errs, fmt.Errorf("%d reads and %d logouts found no session", r.Missed, r.LogoutsFailed))
	}
	if len(r.Lateness) > 0 && slices.Min(r.Lateness) < 0 {
		errs = append(errs, fmt.Errorf("a session expired %v before its time to live was over", -slices.Min(r.Lateness)))
	}
	if r.Leftover != 0 {
		errs = append(errs, fmt.Errorf("%d sessions were still live at the end", r.Leftover))
	}
	return errors.Join(errs...)
}

func (r *report) print(w io.Writer, cfg config) {
	fmt.Fprintf(w, "%d users logged in; a session expires %v after its last read (timer tick %v)\n",
		r.Users[idle]+r.Users[active]+r.Users[gone], cfg.TTL, cfg.Tick)
	fmt.Fprintf(w, "  %5d read their session every %v for %v (%d reads, %d missed): %d expired after they stopped, %d before\n",
		r.Users[active], cfg.Interval, cfg.Duration, r.Reads, r.Missed, r.Expired[active], r.ExpiredEarly)
	fmt.Fprintf(w, "  %5d never came back:  %d expired\n", r.Users[idle], r.Expired[idle])
	fmt.Fprintf(w, "  %5d logged out:       %d expired\n", r.Users[gone], r.Expired[gone])
	if len(r.Lateness) > 0 {
		l := slices.Sorted(slices.Values(r.Lateness))
		fmt.Fprintf(w, "sessions expired after their time to live by: min %v, p50 %v, p99 %v, max %v\n",
			round(l[0]), round(l[len(l)/2]), round(l[len(l)*99/100]), round(l[len(l)-1]))
	}
	if err := r.check(); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
	} else {
		fmt.Fprintln(w, "ok: every unread session expired, none early, none while read, none logged out")
	}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

// run logs the users in, lets them act, waits for every session left to
// expire, and returns what it saw.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Users < 1 || cfg.Active < 0 || cfg.Logout < 0 || cfg.Active+cfg.Logout > 1 ||
		cfg.TTL <= 0 || cfg.Interval <= 0 || cfg.Interval >= cfg.TTL {
		return nil, fmt.Errorf("invalid configuration %+v: want fractions that add up to 1 at most, and 0 < interval < ttl", cfg)
	}
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick))
	if err != nil {
		return nil, err
	}
	defer timer.Stop()

	start := time.Now()
	now := func() time.Duration { return time.Since(start) }
	r := &report{}
	var (
		mu       sync.Mutex
		users    = map[string]*user{} // by session ID
		expiries = make(chan struct{}, cfg.Users)
	)
	store, err := NewStore(timer, cfg.TTL, now, func(id string, s *Session) {
		late := now() - time.Duration(s.lastRead.Load()) - cfg.TTL
		mu.Lock()
		u := users[id]
		r.Expired[u.kind]++
		if u.kind == active && !u.stopped.Load() {
			r.ExpiredEarly++
		}
		r.Lateness = append(r.Lateness, late)
		mu.Unlock()
		expiries <- struct{}{}
	})
	if err != nil {
		return nil, err
	}

	// Logged in under mu: an expiry finds its user.
	ids := make([]string, cfg.Users)
	mu.Lock()
	for i := range ids {
		u := &user{kind: kindOf(i, cfg)}
		id, err := store.Login(fmt.Sprint("user", i))
		if err != nil {
			mu.Unlock()
			return nil, err
		}
		ids[i], users[id] = id, u
		r.Users[u.kind]++
	}
	mu.Unlock()

	var reads, missed, logoutsFailed atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(cfg.Duration)
	for _, id := range ids {
		mu.Lock()
		u := users[id]
		mu.Unlock()
		switch u.kind {
		case gone:
			if !store.Logout(id) {
				logoutsFailed.Add(1)
			}
		case active:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer u.stopped.Store(true)
				read(ctx, store, id, cfg.Interval, end, &reads, &missed)
			}()
		}
	}
	wg.Wait()
	r.Reads, r.Missed, r.LogoutsFailed = reads.Load(), missed.Load(), logoutsFailed.Load()

	// Every session left expires within a time to live, and a few ticks.
	want := r.Users[idle] + r.Users[active]
	giveUp := time.NewTimer(cfg.TTL + 100*cfg.Tick + 5*time.Second)
	defer giveUp.Stop()
	for range want {
		select {
		case <-expiries:
		case <-giveUp.C:
		case <-ctx.Done():
		}
	}
	r.Leftover = store.Len()
	timer.Stop() // waits for the expiry functions to return
	mu.Lock()
	defer mu.Unlock()
	return r, ctx.Err()
}

// user is what the program knows of a user.
type user struct {
	kind    kind
	stopped atomic.Bool // an active user has stopped reading
}

// kindOf returns what user i does: the first fraction of the users are
// active, the next ones log out, the rest stay idle.
func kindOf(i int, cfg config) kind {
	switch {
	case i < int(float64(cfg.Users)*cfg.Active+0.5):
		return active
	case i < int(float64(cfg.Users)*(cfg.Active+cfg.Logout)+0.5):
		return gone
	}
	return idle
}

// read reads the session every interval until end, counting the reads and
// those that found no session.
func read(ctx context.Context, store *Store, id string, interval time.Duration, end time.Time, reads, missed *atomic.Int64) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	done := time.NewTimer(time.Until(end))
	defer done.Stop()
	for {
		reads.Add(1)
		if _, ok := store.Get(id); !ok {
			missed.Add(1)
			return
		}
		select {
		case <-ticker.C:
		case <-done.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
