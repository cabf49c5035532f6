package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// timer is the program's one timer, shared by all its code, as a timer is
// meant to be. Its tests replace it with a timer on a clock.Fake (see
// main_test.go), so that a 30-minute lease lapses in microseconds.
var timer = newTimer()

func newTimer() *hashedwheel.HashedWheelTimer {
	t, err := hashedwheel.New()
	if err != nil {
		panic(err) // the defaults are valid
	}
	return t
}

// Errors of Leases.
var (
	ErrHeld    = errors.New("lease: held by another owner")
	ErrNotHeld = errors.New("lease: not held by this owner")
)

// Leases grants named leases, each held by one owner for a term: an owner
// that does not renew its lease before the term ends loses it, as a
// session, a lock or a leader election does.
type Leases struct {
	term time.Duration

	mu     sync.Mutex
	held   map[string]*lease
	freed  chan struct{} // closed and replaced whenever a lease is freed
	lapsed int           // leases ended by their term
	events io.Writer
}

type lease struct {
	owner   string
	timeout hashedwheel.Timeout // lapses the lease at the end of its term
}

// NewLeases returns leases of the given term; events, if not nil, receives
// a line per lease that lapses.
func NewLeases(term time.Duration, events io.Writer) *Leases {
	return &Leases{term: term, held: map[string]*lease{}, freed: make(chan struct{}), events: events}
}

// Acquire gives name to owner for a term, if no one holds it.
func (l *Leases) Acquire(name, owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.held[name]; ok {
		if cur.owner == owner {
			return nil
		}
		return fmt.Errorf("%w: %q is held by %q", ErrHeld, name, cur.owner)
	}
	ls := &lease{owner: owner}
	t, err := timer.AfterFunc(l.term, func() { l.lapse(name, ls) })
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	ls.timeout = t
	l.held[name] = ls
	return nil
}

// Renew starts a new term of owner's lease on name.
func (l *Leases) Renew(name, owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.held[name]
	if !ok || cur.owner != owner || !cur.timeout.Reset(l.term) {
		return fmt.Errorf("%w: %q", ErrNotHeld, name)
	}
	return nil
}

// Release ends owner's lease on name before its term.
func (l *Leases) Release(name, owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.held[name]
	if !ok || cur.owner != owner || !cur.timeout.Cancel() {
		return fmt.Errorf("%w: %q", ErrNotHeld, name)
	}
	l.free(name)
	return nil
}

// AcquireWait waits for name to be free, then acquires it; it gives up
// with ctx's error once ctx is done, context.DeadlineExceeded once its
// deadline has passed.
func (l *Leases) AcquireWait(ctx context.Context, name, owner string) error {
	for {
		l.mu.Lock()
		freed := l.freed
		l.mu.Unlock()
		err := l.Acquire(name, owner)
		if !errors.Is(err, ErrHeld) {
			return err
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return fmt.Errorf("lease: waiting for %q: %w", name, ctx.Err())
		}
	}
}

// Report writes, every period, how many leases are held and how many have
// lapsed; cancel the returned timeout to stop it.
func (l *Leases) Report(period time.Duration, w io.Writer) (hashedwheel.Timeout, error) {
	return timer.Every(period, func() {
		held, lapsed := l.Counts()
		fmt.Fprintf(w, "%d held, %d lapsed\n", held, lapsed)
	})
}

// Counts returns how many leases are held and how many have lapsed.
func (l *Leases) Counts() (held, lapsed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held), l.lapsed
}

// lapse ends ls, the lease on name, at the end of its term, unless it was
// renewed, released or replaced since its timeout fired.
func (l *Leases) lapse(name string, ls *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[name] != ls {
		return
	}
	l.lapsed++
	l.free(name)
	if l.events != nil {
		fmt.Fprintf(l.events, "lease %q of %q lapsed\n", name, ls.owner)
	}
}

// free removes name and wakes those waiting for a lease. The caller holds mu.
func (l *Leases) free(name string) {
	delete(l.held, name)
	close(l.freed)
	l.freed = make(chan struct{})
}
