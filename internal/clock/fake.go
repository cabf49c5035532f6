package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Fake is a Clock that moves only when told to. Its Sleeper blocks until
// Advance reaches the requested instant, so a test can step a worker
// goroutine tick by tick and wait, with Settle, until it is asleep again.
type Fake struct {
	now atomic.Int64

	mu       sync.Mutex
	changed  *sync.Cond // broadcast on every change of now or of a sleeper
	sleepers []*fakeSleeper
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Duration) *Fake {
	f := &Fake{}
	f.changed = sync.NewCond(&f.mu)
	f.now.Store(int64(start))
	return f
}

// Now returns the fake time.
func (f *Fake) Now() int64 { return f.now.Load() }

// Advance moves the clock forward by d and wakes sleepers whose instant has
// come. It does not wait for them: call Settle for that.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now.Add(int64(d))
	f.changed.Broadcast()
	f.mu.Unlock()
}

// Settle blocks until every sleeper of this clock is asleep: inside Sleep,
// with no pending Wake and an instant still in the future.
func (f *Fake) Settle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.settled() {
		f.changed.Wait()
	}
}

func (f *Fake) settled() bool {
	for _, s := range f.sleepers {
		if !s.asleep || s.woken || s.until <= f.now.Load() {
			return false
		}
	}
	return true
}

// SleepingUntil returns the instant the sleepers are waiting for, the
// earliest if several, or Forever. Call it after Settle.
func (f *Fake) SleepingUntil() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	until := Forever
	for _, s := range f.sleepers {
		if s.asleep && s.until < until {
			until = s.until
		}
	}
	return until
}

// NewSleeper returns a Sleeper driven by Advance.
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
	for !s.woken && f.now.Load() < until {
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
