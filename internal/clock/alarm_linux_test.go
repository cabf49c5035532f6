package clock

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newTestAlarm(t *testing.T) *alarm {
	a := newAlarm()
	if a == nil {
		t.Skip("no timerfd on this system")
	}
	t.Cleanup(a.close)
	return a
}

func TestAlarmFiresNoEarlierThanSet(t *testing.T) {
	a := newTestAlarm(t)
	for range 20 {
		start := time.Now()
		a.set(time.Millisecond)
		<-a.fired()
		if elapsed := time.Since(start); elapsed < time.Millisecond {
			t.Fatalf("the alarm fired after %v, set for 1ms", elapsed)
		}
	}
}

func TestAlarmSetDiscardsAnUnreceivedExpiry(t *testing.T) {
	a := newTestAlarm(t)
	a.set(time.Nanosecond)
	<-a.fired()
	a.expiry <- struct{}{} // as if this expiry had not been received
	a.set(time.Hour)
	select {
	case <-a.fired():
		t.Fatal("an expiry from before set was reported after it")
	default:
	}
}

// The runtime timer of a sleep is set for an hour; only the alarm, brought
// forward under it, can end the sleep.
func TestRealSleeperEndsOnTheAlarm(t *testing.T) {
	r := NewReal()
	s := r.NewSleeper().(*realSleeper)
	defer s.Close()
	if s.alarm == nil {
		t.Skip("no timerfd on this system")
	}
	done := make(chan struct{})
	go func() {
		s.Sleep(r.Now() + int64(time.Hour))
		close(done)
	}()
	for !armed(t, s.alarm) {
		runtime.Gosched()
	}
	soon := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(time.Millisecond))}
	if err := unix.TimerfdSettime(s.alarm.fd, 0, &soon, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the sleep outlasted its alarm by a minute")
	}
}

// armed reports whether the alarm is set to fire.
func armed(t *testing.T, a *alarm) bool {
	var spec unix.ItimerSpec
	if err := unix.TimerfdGettime(a.fd, &spec); err != nil {
		t.Fatal(err)
	}
	return spec.Value.Nano() > 0
}

func TestAlarmCloseEndsItsGoroutine(t *testing.T) {
	// TestMain's leak check fails the package if the listening goroutine
	// of any alarm outlives its close; this alarm is closed while parked.
	a := newAlarm()
	if a == nil {
		t.Skip("no timerfd on this system")
	}
	a.set(time.Hour)
	a.close()
}
