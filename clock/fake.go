package clock

import (
	"sync"
	"time"
)

// Fake is a Clock that moves only when a test moves it. A timer made with
// it (hashedwheel.WithClock) is deterministic: when Advance returns, every
// timer on the clock has processed every tick that ended by then and every
// task those ticks started has returned, whichever executor runs them.
//
// A Fake may be made anywhere, in TestMain or at package level too, and
// shared by any number of timers. Its methods are safe for concurrent use.
// A task that blocks until the test does something after Advance returns
// makes Advance wait forever: release it from another goroutine.
type Fake struct {
	start time.Time

	mu       sync.Mutex
	changed  *sync.Cond // broadcast on every change of elapsed, of a sleeper or of busy
	elapsed  int64      // nanoseconds since start; guarded by mu
	busy     int        // tasks handed to executors that have not returned
	sleepers []*fakeSleeper
}

// NewFake returns a fake clock whose Now reads start and whose Nanotime
// reads 0.
func NewFake(start time.Time) *Fake {
	f := &Fake{start: start}
	f.changed = sync.NewCond(&f.mu)
	return f
}

// Now returns the fake wall-clock time: start plus the time advanced.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.start.Add(time.Duration(f.elapsed))
}

// Nanotime returns the nanoseconds advanced since the clock was made.
func (f *Fake) Nanotime() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.elapsed
}

// Advance moves the clock forward by d and returns once every timer on it
// has caught up: it stops at each instant a timer sleeps until, in order,
// and waits there until the timers are asleep again and the tasks they
// started have returned, so that a periodic timeout runs at each of its
// instants and a task that schedules another sees the time it ran at.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.elapsed + int64(max(d, 0))
	for {
		f.waitSettled()
		next := min(f.sleepingUntil(), target)
		if next > f.elapsed {
			f.elapsed = next
			f.changed.Broadcast()
		}
		if f.elapsed >= target {
			f.waitSettled()
			return
		}
	}
}

// Jump moves the clock forward by d at once and wakes the sleepers whose
// instant has come, without waiting for them: a test that must look at a
// timer in the middle of its work calls Jump, then Settle.
func (f *Fake) Jump(d time.Duration) {
	f.mu.Lock()
	f.elapsed += int64(max(d, 0))
	f.changed.Broadcast()
	f.mu.Unlock()
}

// Settle blocks until every timer on the clock is asleep until an instant
// still to come, with no wake-up pending, and every task the timers
// started has returned.
func (f *Fake) Settle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitSettled()
}

// WaitAsleep blocks until every timer on the clock is asleep until an
// instant still to come, with no wake-up pending, as Settle does, but does
// not wait for tasks: a test whose tasks block until it releases them
// calls WaitAsleep where it would call Settle.
func (f *Fake) WaitAsleep() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.asleep() {
		f.changed.Wait()
	}
}

func (f *Fake) waitSettled() {
	for f.busy > 0 || !f.asleep() {
		f.changed.Wait()
	}
}

// asleep reports whether every sleeper is asleep until an instant to come.
func (f *Fake) asleep() bool {
	for _, s := range f.sleepers {
		if !s.asleep || s.woken || s.until <= f.elapsed {
			return false
		}
	}
	return true
}

// SleepingUntil returns the Nanotime instant the sleepers wait for, the
// earliest if several, or Forever. Call it after Settle.
func (f *Fake) SleepingUntil() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sleepingUntil()
}

func (f *Fake) sleepingUntil() int64 {
	until := Forever
	for _, s := range f.sleepers {
		if s.asleep && s.until < until {
			until = s.until
		}
	}
	return until
}

// NewSleeper returns a Sleeper driven by Advance and Jump. It implements
// WorkTracker.
func (f *Fake) NewSleeper() Sleeper {
	s := &fakeSleeper{clock: f}
	f.mu.Lock()
	f.sleepers = append(f.sleepers, s)
	f.mu.Unlock()
	return s
}

// release forgets s, so that Settle no longer waits for it.
func (f *Fake) release(s *fakeSleeper) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.sleepers {
		if x == s {
			f.sleepers = append(f.sleepers[:i], f.sleepers[i+1:]...)
			break
		}
	}
	f.changed.Broadcast()
}

type fakeSleeper struct {
	clock  *Fake
	asleep bool
	woken  bool
	until  int64
}

func (s *fakeSleeper) Sleep(until int64) {
	f := s.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	s.until = until
	for !s.woken && f.elapsed < until {
		s.asleep = true
		f.changed.Broadcast()
		f.changed.Wait()
	}
	s.asleep = false
	s.woken = false
	f.changed.Broadcast()
}

func (s *fakeSleeper) Wake() {
	f := s.clock
	f.mu.Lock()
	s.woken = true
	f.changed.Broadcast()
	f.mu.Unlock()
}

// Close detaches the sleeper from its clock, so that Settle no longer waits
// for it.
func (s *fakeSleeper) Close() { s.clock.release(s) }

// Started counts n tasks handed to an executor: Settle waits for them.
func (s *fakeSleeper) Started(n int) {
	f := s.clock
	f.mu.Lock()
	f.busy += n
	f.mu.Unlock()
}

// Finished counts n tasks returned.
func (s *fakeSleeper) Finished(n int) {
	f := s.clock
	f.mu.Lock()
	f.busy -= n
	if f.busy == 0 {
		f.changed.Broadcast()
	}
	f.mu.Unlock()
}
