package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func TestMetricsRun(t *testing.T) {
	cfg := defaultConfig()
	cfg.Duration = 300 * time.Millisecond
	cfg.Rate = 5000
	cfg.MaxDelay = 100 * time.Millisecond
	cfg.Every = 100 * time.Millisecond
	cfg.Tick = 5 * time.Millisecond
	// Run twice: the second run's Publish takes the expvar variable over.
	for i := range 2 {
		var out bytes.Buffer
		if err := run(context.Background(), cfg, &out); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		got := out.String()
		for _, want := range []string{"/debug/vars", `"scheduled"`, `"max_tick_lag_seconds"`, `"task_panics"`, "pending ", "ok: scheduled ="} {
			if !strings.Contains(got, want) {
				t.Errorf("run %d: output lacks %q:\n%s", i, want, got)
			}
		}
	}
}

func TestMetricsRejections(t *testing.T) {
	cfg := defaultConfig()
	cfg.Duration = 200 * time.Millisecond
	cfg.Rate = 5000
	cfg.Cancel = 0
	cfg.MaxDelay = time.Hour // nothing fires: the limit is reached at once
	cfg.MaxPending = 100
	cfg.Every = time.Hour
	var out bytes.Buffer
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"returned_by_stop": 100`) {
		t.Errorf("want the 100 pending timeouts returned by Stop:\n%s", out.String())
	}
	m := regexp.MustCompile(`"rejected_full": (\d+)`).FindStringSubmatch(out.String())
	if m == nil || m[1] == "0" {
		t.Errorf("want rejections at the limit:\n%s", out.String())
	}
}

// TestCheckVars: checkVars accepts the JSON form of a balanced snapshot,
// and refuses one that lacks a field or does not add up.
func TestCheckVars(t *testing.T) {
	s := hashedwheel.Stats{Pending: 1, Scheduled: 10, Expired: 4, Cancelled: 3, ReturnedByStop: 2,
		RejectedFull: 5, RejectedStopped: 6, ExecutorFailures: 7, Ticks: 8, MaxTickLag: 1500 * time.Millisecond}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]float64
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v) != len(hashedwheel.StatsFields()) {
		t.Errorf("%d variables, want one per field of Stats: %v", len(v), v)
	}
	if err := checkVars(v, 2); err != nil {
		t.Errorf("checkVars of a balanced snapshot: %v", err)
	}
	v["expired"]++
	if checkVars(v, 2) == nil {
		t.Error("checkVars accepted counters that do not add up")
	}
	delete(v, "goexits")
	if err := checkVars(v, 2); err == nil || !strings.Contains(err.Error(), "lacks goexits") {
		t.Errorf("checkVars of a variable without goexits: %v", err)
	}
}
