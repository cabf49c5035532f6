package clock

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A fresh sleeper has no stale expiry to report, so its first Sleep ends
// no earlier than its instant.
func TestRealSleeperSleepsUntilItsInstant(t *testing.T) {
	r := NewReal()
	for range 20 {
		s := r.NewSleeper()
		until := r.Now() + int64(time.Millisecond)
		s.Sleep(until)
		if now := r.Now(); now < until {
			t.Fatalf("Sleep returned %v before its instant", time.Duration(until-now))
		}
		s.Close()
	}
}

func TestRealSleeperWakeEndsTheNextSleep(t *testing.T) {
	r := NewReal()
	s := r.NewSleeper()
	defer s.Close()
	for _, until := range []int64{r.Now() + int64(time.Hour), Forever} {
		s.Wake()
		s.Wake() // a second wake while one is pending is absorbed
		s.Sleep(until)
	}
	// Both wakes of each pair were used up by one sleep: with none pending,
	// a short sleep lasts until its instant.
	until := r.Now() + int64(time.Millisecond)
	s.Sleep(until)
	if r.Now() < until {
		t.Fatal("a pending wake outlived the sleep it ended")
	}
}

func TestRealSleeperWakeEndsASleepInProgress(t *testing.T) {
	r := NewReal()
	s := r.NewSleeper()
	defer s.Close()
	for _, until := range []int64{r.Now() + int64(time.Hour), Forever} {
		done := make(chan struct{})
		go func() {
			s.Sleep(until)
			close(done)
		}()
		s.Wake()
		<-done
	}
}
