package clock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/internal/dispatch"
	"github.com/wheeltimer/wheeltimer/internal/goid"
)

// Fake is a Clock that moves only when a test moves it. A timer made with
// it (hashedwheel.WithClock) is deterministic: when Advance returns, every
// timer on the clock has processed every tick that ended by then and every
// task those ticks started has returned, whichever executor runs them.
// Its Sleep, After, NewTimer, NewTicker and AfterFunc wait on the fake
// time too, for application code that takes a Clock.
//
// A Fake may be made anywhere, in TestMain or at package level too, and
// shared by any number of timers. Make it with NewFake: the zero Fake is
// not usable, and hashedwheel.New refuses it. Its methods are safe for
// concurrent use.
// A task that blocks until the test does something after Advance returns
// makes Advance wait forever: release it from another goroutine. Advance
// and Settle called from a task, a Cancelled hook or a Scheduler of a
// timer on the clock would wait for their own caller: they panic instead,
// with a message that says so (the timer logs a task's panic); call Jump
// there.
type Fake struct {
	start time.Time

	mu       sync.Mutex
	changed  *sync.Cond // broadcast on every change of elapsed, of a sleeper, of busy, or a timeout accepted
	elapsed  int64      // nanoseconds since start; guarded by mu
	target   int64      // where the Advance calls in progress take the clock, together
	busy     int        // tasks handed to executors that have not returned
	sleepers []*fakeSleeper
	waiters  []*fakeWaiter // of AfterFunc, NewTimer, NewTicker and Sleep, not yet fired or stopped
}

// NewFake returns a fake clock whose Now reads start and whose Nanotime
// reads 0.
func NewFake(start time.Time) *Fake {
	f := &Fake{start: start}
	f.changed = sync.NewCond(&f.mu)
	return f
}

// Sleeper returns a sleeper driven by Advance and Jump, for a hashedwheel
// timer's worker; the clock waits for it once the timer watches it, as it
// starts. It refuses the zero Fake, and a nil one embedded in a custom
// clock: neither keeps time.
func (f *Fake) Sleeper() (clockwork.Sleeper, error) {
	if f == nil || f.changed == nil {
		return nil, errZeroFake
	}
	return &fakeSleeper{clock: f}, nil
}

// errZeroFake is check's error.
var errZeroFake = errors.New("clock: a zero or nil clock.Fake: make one with clock.NewFake")

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
// has caught up: it stops at each instant a timer sleeps until or a
// Timer, Ticker, Sleep or AfterFunc of the clock is due, in order, and
// waits there until the timers are asleep again and the tasks they
// started have returned, so that a periodic timeout runs at each of its
// instants and a task that schedules another sees the time it ran at.
//
// Every timeout accepted before Advance is called, on any goroutine, is
// taken into account: one due by the end has run when Advance returns.
// A channel is different: Advance sends the time on the channel of a
// Timer, Ticker or After due, or ends a Sleep, and goes on; the goroutine
// that receives it runs after, perhaps after Advance returns. A test that
// must see what that goroutine did waits for a signal of its own (a
// channel it sends on when done), and one whose goroutine waits again
// calls BlockUntilContext before the next Advance.
//
// Advance calls made at once add up: each moves the clock d further than
// the calls before it, and returns once the clock has reached its own end.
// Advance panics if called from a task, a Cancelled hook or a Scheduler of
// a timer on the clock, which it would wait for: call Jump there.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseFromTask("Advance")
	f.target = max(f.target, f.elapsed) + int64(max(d, 0))
	target := f.target
	for {
		f.waitSettled()
		next := min(f.sleepingUntil(), f.nextWaiter(), target)
		if next > f.elapsed {
			f.elapsed = next
			f.changed.Broadcast()
		}
		f.runDue()
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
	f.runDue()
	f.mu.Unlock()
}

// Settle blocks until every timer on the clock is asleep until an instant
// still to come, with no wake-up pending and nothing accepted that its
// worker has not taken in, and every task the timers started has
// returned. Like Advance, it panics if called from a task of a timer on
// the clock.
func (f *Fake) Settle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseFromTask("Settle")
	f.waitSettled()
}

// BlockUntilContext blocks until the clock has at least n waiters (see
// Waiters), or until ctx is done, then returning an error that wraps ctx's
// and gives the count. A test calls it before Advance, so that the code
// under test has scheduled what the Advance should run, as with
// clockwork's BlockUntilContext; at least n, not exactly, so that a count
// that overshoots meanwhile does not make it wait for nothing. The count
// is every waiter on the clock, an Every job's or a kept timeout's too:
// read Waiters first and wait for that many more.
func (f *Fake) BlockUntilContext(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.changed.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		have := f.countWaiters()
		if have >= n {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("clock: BlockUntilContext: %d waiters, waited for %d: %w", have, n, err)
		}
		f.changed.Wait()
	}
}

// Waiters returns the number of waiters on the clock: the pending
// timeouts of the timers on it (PendingTimeouts summed over them: accepted
// and neither run nor cancelled, a context of WithTimeout or an Every job
// counting one), and the clock's own Timers, Tickers, Sleeps and AfterFunc
// functions neither fired nor stopped (a Ticker counting one until Stop).
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.countWaiters()
}

// countWaiters returns Waiters, under the lock.
func (f *Fake) countWaiters() int {
	n := len(f.waiters)
	for _, s := range f.sleepers {
		if s.timer != nil {
			n += int(s.timer.Pending())
		}
	}
	return n
}

// refuseFromTask panics if the caller runs a task of a timer, which what
// (Advance, Settle) would wait for if the timer were on this clock: a task
// on an executor (its drain function's frame is on the stack), or the
// worker of a timer on the clock, where hooks, Schedulers and pool.Inline
// tasks run. It panics too in a testing/synctest bubble that a timer on
// the clock was not started in, where waiting for its worker would cross
// the bubble's edge. The caller holds mu.
func (f *Fake) refuseFromTask(what string) {
	id, bubble := goid.Current(), goid.Bubble()
	caller := dispatch.InTask()
	for _, s := range f.sleepers {
		if s.bubble != bubble {
			panic("clock: Fake." + what + " called in a testing/synctest bubble a timer on this clock was not " +
				"started in, or outside the one it was: move the clock where its timers run")
		}
		caller = caller || s.timer != nil && s.timer.Worker() == id
	}
	if caller {
		panic("clock: Fake." + what + " called from a task, Cancelled hook or Scheduler of a timer, " +
			"which it would wait for: call Jump there, or " + what + " from another goroutine")
	}
}

// WaitAsleep blocks until every timer on the clock is asleep until an
// instant still to come, with no wake-up pending and nothing accepted that
// its worker has not taken in, as Settle does, but does not wait for
// tasks: a test whose tasks block until it releases them calls WaitAsleep
// where it would call Settle.
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

// asleep reports whether every sleeper is asleep until an instant to come
// with nothing accepted that its timer has not taken in. It wakes a
// sleeper whose timer has: a producer wakes an idle worker, but not one
// asleep until its next tick, which would take the work in only then.
func (f *Fake) asleep() bool {
	for _, s := range f.sleepers {
		if !s.asleep || s.woken || s.until <= f.elapsed {
			return false
		}
		if s.timer != nil && s.timer.Unseen() {
			s.woken = true
			f.changed.Broadcast()
			return false
		}
	}
	return true
}

// sleepingUntil returns the Nanotime instant the sleepers wait for, the
// earliest if several, or clockwork.Forever.
func (f *Fake) sleepingUntil() int64 {
	until := clockwork.Forever
	for _, s := range f.sleepers {
		if s.asleep && s.until < until {
			until = s.until
		}
	}
	return until
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
	timer  clockwork.Watched // nil until Watch
	bubble uint64            // the testing/synctest bubble of its timer's Start; 0: none
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

// Watch registers the sleeper and its timer (clockwork.Watcher): from now
// on Advance and Settle wait for it, and BlockUntilContext counts its
// timer's timeouts. The sleeper keeps the testing/synctest bubble of the
// caller, the timer's Start: the clock refuses to be moved from another.
func (s *fakeSleeper) Watch(timer clockwork.Watched) {
	f := s.clock
	bubble := goid.Bubble()
	f.mu.Lock()
	s.timer, s.bubble = timer, bubble
	f.sleepers = append(f.sleepers, s)
	f.changed.Broadcast()
	f.mu.Unlock()
}

// Accepted wakes the waiters of BlockUntilContext and of Advance: a
// timeout was accepted.
func (s *fakeSleeper) Accepted() {
	f := s.clock
	f.mu.Lock()
	f.changed.Broadcast()
	f.mu.Unlock()
}

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
