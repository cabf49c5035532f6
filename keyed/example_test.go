package keyed_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/keyed"
)

// Sessions that end after 30 minutes without a request. The timer runs on
// a fake clock here, so that the example's half hour passes at once; a
// program gives New its ordinary timer.
func ExampleTimers() {
	fake := clock.NewFake(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(time.Second), hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	sessions, err := keyed.New(timer, func(id string, s *Session) {
		fmt.Println("expired:", id, s.user) // 30 minutes without a request
	})
	if err != nil {
		panic(err)
	}
	for id, user := range map[string]string{"s1": "ann", "s2": "bob", "s3": "eve"} {
		if err := sessions.Set(id, &Session{user}, 30*time.Minute); err != nil {
			panic(err) // ErrStopped or ErrTooManyPendingTimeouts, wrapped
		}
	}

	fake.Advance(20 * time.Minute)
	// A request pushes its session's deadline back.
	if s, ok := sessions.Move("s1", 30*time.Minute); ok {
		fmt.Println("request from", s.user)
	}
	// Logging out ends a session: its expiry never runs.
	if s, ok := sessions.Remove("s2"); ok {
		fmt.Println("logged out:", s.user)
	}

	fake.Advance(15 * time.Minute) // s3's half hour is over
	fmt.Println("pending:", sessions.Len(), sessions.Pending("s1"))
	fake.Advance(time.Hour)
	fmt.Println("pending:", sessions.Len())
	// Output:
	// request from ann
	// logged out: bob
	// expired: s3 eve
	// pending: 1 true
	// expired: s1 ann
	// pending: 0
}

// After the timer's Stop, keys never expire and Set fails; the keys still
// in the set can be taken out, to save them for the next run.
func ExampleTimers_stop() {
	timer, err := hashedwheel.New()
	if err != nil {
		panic(err)
	}
	carts, err := keyed.New(timer, func(user string, items int) {
		fmt.Println("abandoned:", user)
	})
	if err != nil {
		panic(err)
	}
	if err := carts.Set("ann", 3, time.Hour); err != nil {
		panic(err)
	}

	timer.Stop()
	err = carts.Set("bob", 1, time.Hour)
	fmt.Println(errors.Is(err, hashedwheel.ErrStopped), carts.Len())
	if items, ok := carts.Remove("ann"); ok {
		fmt.Println("saving ann's cart:", items, "items")
	}
	// Output:
	// true 1
	// saving ann's cart: 3 items
}

// A shutdown: after the timer's Stop the keys that stayed never expire;
// All lists them, Reschedule tells them from keys not in the set, and
// Drain takes them all out, here to save each session for the next run.
func ExampleTimers_Drain() {
	timer, err := hashedwheel.New()
	if err != nil {
		panic(err)
	}
	sessions, err := keyed.New(timer, func(id string, s *Session) { s.Close() })
	if err != nil {
		panic(err)
	}
	for id, user := range map[string]string{"s1": "ann", "s2": "bob"} {
		if err := sessions.Set(id, &Session{user}, 30*time.Minute); err != nil {
			panic(err)
		}
	}

	timer.Stop()
	var ids []string
	for id := range sessions.All() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fmt.Println("still open:", ids)
	_, err = sessions.Reschedule("s1", 30*time.Minute)
	fmt.Println("s1:", errors.Is(err, hashedwheel.ErrStopped))
	_, err = sessions.Reschedule("s9", 30*time.Minute)
	fmt.Println("s9:", errors.Is(err, keyed.ErrNotFound))

	var saved []string
	n := sessions.Drain(func(id string, s *Session) { saved = append(saved, id+"="+s.user) })
	slices.Sort(saved)
	fmt.Println("saved", n, saved, "left", sessions.Len())
	// Output:
	// still open: [s1 s2]
	// s1: true
	// s9: true
	// saved 2 [s1=ann s2=bob] left 0
}

// The timeouts the timer's Stop hands back include those of a keyed set,
// each with its key and value: Entry finds them among the others.
func ExampleTimers_Entry() {
	timer, err := hashedwheel.New()
	if err != nil {
		panic(err)
	}
	carts, err := keyed.New(timer, func(user string, items int) {})
	if err != nil {
		panic(err)
	}
	if err := carts.Set("ann", 3, time.Hour); err != nil {
		panic(err)
	}
	if _, err := timer.AfterFunc(time.Hour, func() {}); err != nil {
		panic(err)
	}
	for _, timeout := range timer.Stop() {
		if user, items, ok := carts.Entry(timeout); ok {
			fmt.Println("cart of", user, "with", items, "items")
		} else {
			fmt.Println("another timeout")
		}
	}
	// Unordered output:
	// cart of ann with 3 items
	// another timeout
}

// A key not equal to itself, a NaN, could never be found again: Set
// refuses it.
func ExampleTimers_Set_invalidKey() {
	timer, err := hashedwheel.New()
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	readings, err := keyed.New(timer, func(float64, string) {})
	if err != nil {
		panic(err)
	}
	err = readings.Set(math.NaN(), "sensor 1", time.Minute)
	fmt.Println(errors.Is(err, keyed.ErrInvalidKey), readings.Len())
	// Output: true 0
}

// Session is an application's session.
type Session struct{ user string }

// Close ends the session.
func (s *Session) Close() { fmt.Println("closed the session of", s.user) }

// readmeSnippet is the README's snippet, whole.
func readmeSnippet(timer hashedwheel.Timer, id string, s *Session, serve func(*Session)) error {
	sessions, err := keyed.New(timer, func(id string, s *Session) {
		s.Close() // 30 minutes without a request
	})
	if err != nil {
		return err
	}
	// At login:
	if err := sessions.Set(id, s, 30*time.Minute); err != nil {
		return err // ErrStopped or ErrTooManyPendingTimeouts, wrapped
	}
	// On every request: push the deadline back, and get the session.
	if s, ok := sessions.Move(id, 30*time.Minute); ok {
		serve(s)
	}
	// At logout: the session will not expire.
	sessions.Remove(id)
	return nil
}

// A session set at login, read by a request, removed at logout: its
// expiry never runs.
func ExampleNew() {
	fake := clock.NewFake(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(time.Second), hashedwheel.WithClock(fake))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	serve := func(s *Session) { fmt.Println("serving", s.user) }
	if err := readmeSnippet(timer, "s1", &Session{"ann"}, serve); err != nil {
		panic(err)
	}
	fake.Advance(time.Hour)
	fmt.Println("pending timeouts:", timer.PendingTimeouts())
	// Output:
	// serving ann
	// pending timeouts: 0
}
