package main

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// A replica announces, with NOTIFY, when a claim may find an order it
// made: an order no replica holds ("fresh") may be claimed about half a
// window before its deadline, and one it holds ("lease") may be taken over
// when its lease runs out, should it die. It does not announce each order:
// an order claimable no earlier than the last announcement, made while that
// is more than announceMargin away, commits before it; the claim every
// replica makes then sees the order, and arms the next claim for it. The
// margin is longer than a statement takes, so that those orders are
// committed by then.
const announceMargin = time.Second

// The kinds of announcement.
const (
	fresh = iota // of an order no replica holds
	lease        // of an order the announcing replica holds
)

var kindNames = [...]string{fresh: "fresh", lease: "lease"}

// announcer is what a replica has announced of the orders it made.
type announcer struct {
	mu   sync.Mutex
	last [2]time.Time // per kind, the claim time of the latest announcement committed
}

// notice returns the notification of an order of the kind that may be
// claimed in, at at, from the replica named, or "" if a committed
// announcement covers it.
func (a *announcer) notice(kind int, replica string, in time.Duration, at time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if last := a.last[kind]; last.After(time.Now().Add(announceMargin)) && !at.Before(last) {
		return ""
	}
	return fmt.Sprintf("%s %s %d", kindNames[kind], replica, μs(in))
}

// sent records an announcement committed.
func (a *announcer) sent(kind int, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if at.After(a.last[kind]) {
		a.last[kind] = at
	}
}

// floors are the times of the announcements a replica heard: for each, a
// claim that starts at or after it must be made, as the orders it covers
// are committed by then, unseen by any claim that started before.
type floors struct {
	mu sync.Mutex
	at []time.Time
}

func (f *floors) add(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = append(f.at, at)
}

// claimed drops the floors a claim that started at start meets, and
// returns how long from now to the earliest left, if any.
func (f *floors) claimed(start time.Time) (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = slices.DeleteFunc(f.at, func(at time.Time) bool { return !at.After(start) })
	if len(f.at) == 0 {
		return 0, false
	}
	return time.Until(slices.MinFunc(f.at, func(a, b time.Time) int { return a.Compare(b) })), true
}
