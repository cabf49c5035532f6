package contender

import (
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

var testConfig = Config{Tick: time.Millisecond, WheelSize: 64}

// Every adapter fires what it schedules and does not fire what it
// cancelled.
func TestEveryContenderFiresAndCancels(t *testing.T) {
	for _, c := range All() {
		t.Run(c.Name, func(t *testing.T) {
			tm, err := c.New(testConfig)
			if err != nil {
				t.Fatal(err)
			}
			cancelledRan := make(chan struct{}, 1)
			h, err := tm.Schedule(20*time.Millisecond, func() { cancelledRan <- struct{}{} })
			if err != nil {
				t.Fatal(err)
			}
			if !tm.Cancel(h) {
				t.Fatal("Cancel of a pending timeout reported false")
			}
			fired := make(chan time.Time, 1)
			start := time.Now()
			if _, err := tm.Schedule(30*time.Millisecond, func() { fired <- time.Now() }); err != nil {
				t.Fatal(err)
			}
			select {
			case at := <-fired:
				slack := time.Duration(0)
				if !c.NeverEarly {
					slack = 2 * testConfig.Tick // go-zero: up to two ticks early, by design
				}
				if early := start.Add(30*time.Millisecond - slack).Sub(at); early > 0 {
					t.Errorf("fired %v early", early)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("scheduled timeout never fired")
			}
			select {
			case <-cancelledRan:
				t.Error("a cancelled timeout ran")
			default:
			}
			tm.Close()
		})
	}
}

// Every adapter's Rearm moves a pending timeout: pushed an hour later it
// does not fire at its old deadline (a timeout due well after it fires
// first) and can still be cancelled; pulled in from an hour it fires.
func TestEveryContenderRearms(t *testing.T) {
	for _, c := range All() {
		t.Run(c.Name, func(t *testing.T) {
			tm, err := c.New(testConfig)
			if err != nil {
				t.Fatal(err)
			}
			defer tm.Close()
			pushedRan := make(chan struct{}, 1)
			pushed, err := tm.Schedule(30*time.Millisecond, func() { pushedRan <- struct{}{} })
			if err != nil {
				t.Fatal(err)
			}
			if pushed, err = tm.Rearm(pushed, time.Hour); err != nil {
				t.Fatal(err)
			}
			pulledRan := make(chan struct{}, 1)
			pulled, err := tm.Schedule(time.Hour, func() { pulledRan <- struct{}{} })
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tm.Rearm(pulled, 150*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			select {
			case <-pulledRan:
			case <-time.After(20 * time.Second):
				t.Fatal("a timeout pulled in from 1h to 150ms never fired")
			}
			select {
			case <-pushedRan:
				t.Fatal("a timeout pushed from 30ms to 1h fired")
			default:
			}
			if !tm.Cancel(pushed) {
				t.Error("Cancel of a re-armed pending timeout reported false")
			}
		})
	}
}

func TestSelect(t *testing.T) {
	got, err := Select("minheap")
	if err != nil || len(got) != 2 || got[0].Name != Baseline || got[1].Name != "minheap" {
		t.Fatalf("Select(minheap) = %v, %v; want the baseline and minheap", got, err)
	}
	if _, err := Select("nope"); err == nil {
		t.Fatal("Select accepted an unknown name")
	}
	if all, _ := Select(""); len(all) != len(All()) {
		t.Fatal("Select(\"\") is not All()")
	}
}
