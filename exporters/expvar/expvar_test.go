package expvar_test

import (
	"encoding/json"
	"errors"
	"expvar"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	wheelexpvar "github.com/wheeltimer/wheeltimer/exporters/expvar"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/internal/leaktest"
	"github.com/wheeltimer/wheeltimer/pool"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// fixed is a Source whose Stats never change.
type fixed hashedwheel.Stats

func (f fixed) Stats() hashedwheel.Stats { return hashedwheel.Stats(f) }

// fetchVars gets /debug/vars from a real HTTP listener serving expvar.
func fetchVars(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	srv := httptest.NewServer(expvar.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var vars map[string]json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
	return vars
}

// TestPublishServesTheTimersStats: a published timer's Stats are served
// at /debug/vars in their JSON form, read at the request.
func TestPublishServesTheTimersStats(t *testing.T) {
	fake := clock.NewFake(time.Now())
	timer, err := hashedwheel.New(hashedwheel.WithClock(fake), hashedwheel.WithExecutor(pool.Inline),
		hashedwheel.WithTickDuration(10*time.Millisecond))
	require.NoError(t, err)
	defer timer.Stop()
	publish(t, "wheeltimer_test_served", timer)
	for range 3 {
		_, err := timer.AfterFunc(5*time.Millisecond, func() {})
		require.NoError(t, err)
	}
	cancelled, err := timer.AfterFunc(time.Hour, func() {})
	require.NoError(t, err)
	cancelled.Cancel()
	fake.WaitAsleep()
	fake.Advance(20 * time.Millisecond)
	fake.WaitAsleep()

	raw := fetchVars(t)["wheeltimer_test_served"]
	require.Contains(t, string(raw), `"max_tick_lag_seconds":`)
	var got hashedwheel.Stats
	require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
	require.Equal(t, timer.Stats(), got, "served %s", raw)
	require.Equal(t, uint64(4), got.Scheduled)
	require.Equal(t, uint64(3), got.Expired)
	require.Equal(t, uint64(1), got.Cancelled)
	require.Equal(t, 5*time.Millisecond, got.MaxLateness, "due at 5ms, run at the tick's end, 10ms")

	var parts map[string]float64
	require.NoError(t, json.Unmarshal(raw, &parts))
	for name, want := range map[string]float64{
		"hand_over_p50_seconds": 0.005, "hand_over_p99_seconds": 0.005, "max_hand_over_seconds": 0.005,
		"hand_off_wait_p50_seconds": 0, "hand_off_wait_p99_seconds": 0, // inline: no wait for a goroutine
	} {
		require.Contains(t, parts, name, "%s", raw)
		require.Equal(t, want, parts[name], name)
	}
}

// publish publishes timer under name for the test's length.
func publish(t *testing.T, name string, timer wheelexpvar.Source) {
	t.Helper()
	require.NoError(t, wheelexpvar.Publish(name, timer))
	t.Cleanup(func() { wheelexpvar.Unpublish(name) })
}

// TestPublishRefusesANameItServes: a second Publish of a name fails with
// ErrNameTaken, whichever timer it is given, and the name goes on serving
// the first timer: two timers never report under one name.
func TestPublishRefusesANameItServes(t *testing.T) {
	publish(t, "wheeltimer_test_twice", fixed{Scheduled: 1})
	for _, second := range []wheelexpvar.Source{fixed{Scheduled: 2}, fixed{Scheduled: 1}} {
		err := wheelexpvar.Publish("wheeltimer_test_twice", second)
		require.ErrorIs(t, err, wheelexpvar.ErrNameTaken)
		require.Contains(t, err.Error(), `"wheeltimer_test_twice"`)
	}
	raw := fetchVars(t)["wheeltimer_test_twice"]
	var got map[string]float64
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, 1.0, got["scheduled"], "%s", raw)
}

// TestUnpublishFreesTheName: once unpublished, a name reads null and the
// next Publish serves its timer under it; Unpublish reports whether the
// name served a timer.
func TestUnpublishFreesTheName(t *testing.T) {
	publish(t, "wheeltimer_test_again", fixed{Scheduled: 1})
	require.True(t, wheelexpvar.Unpublish("wheeltimer_test_again"))
	require.False(t, wheelexpvar.Unpublish("wheeltimer_test_again"), "unpublished already")
	require.False(t, wheelexpvar.Unpublish("wheeltimer_test_never"), "never published")
	require.Equal(t, "null", string(fetchVars(t)["wheeltimer_test_again"]))

	publish(t, "wheeltimer_test_again", fixed{Scheduled: 2, MaxTickLag: 1500 * time.Millisecond})
	raw := fetchVars(t)["wheeltimer_test_again"]
	var got map[string]float64
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, 2.0, got["scheduled"], "%s", raw)
	require.Equal(t, 1.5, got["max_tick_lag_seconds"], "%s", raw)
	require.NotContains(t, got, "hand_over_p50_seconds", "a Source without Lateness")
}

// TestPublishRefusesANameTakenByOtherCode: a name published with expvar
// by other code is refused with ErrNameTaken, and left as it was.
func TestPublishRefusesANameTakenByOtherCode(t *testing.T) {
	other, ok := expvar.Get("wheeltimer_test_taken").(*expvar.Int) // made by an earlier run of -count
	if !ok {
		other = expvar.NewInt("wheeltimer_test_taken")
	}
	other.Set(42)
	err := wheelexpvar.Publish("wheeltimer_test_taken", fixed{})
	require.ErrorIs(t, err, wheelexpvar.ErrNameTaken)
	require.Contains(t, err.Error(), `"wheeltimer_test_taken"`)
	require.Equal(t, "42", expvar.Get("wheeltimer_test_taken").String())
}

// TestPublishRefusesAnEmptyNameAndANilTimer, typed nil included.
func TestPublishRefusesAnEmptyNameAndANilTimer(t *testing.T) {
	require.Error(t, wheelexpvar.Publish("", fixed{}))
	require.Error(t, wheelexpvar.Publish("wheeltimer_test_nil", nil))
	var timer *hashedwheel.HashedWheelTimer
	err := wheelexpvar.Publish("wheeltimer_test_nil", timer)
	require.Error(t, err)
	require.False(t, errors.Is(err, wheelexpvar.ErrNameTaken))
	require.Nil(t, expvar.Get("wheeltimer_test_nil"), "nothing published")
}

// TestPublishConcurrently: of goroutines publishing one new name at once,
// exactly one succeeds and the others get ErrNameTaken; those publishing
// names of their own all succeed; none panics.
func TestPublishConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 16)
	names := make([]string, len(errs))
	for i := range errs {
		names[i] = "wheeltimer_test_shared"
		if i%2 == 1 {
			names[i] = "wheeltimer_test_own_" + string(rune('a'+i))
		}
		t.Cleanup(func() { wheelexpvar.Unpublish(names[i]) })
		wg.Go(func() {
			errs[i] = wheelexpvar.Publish(names[i], fixed{Scheduled: uint64(i)})
		})
	}
	wg.Wait()
	shared := 0
	for i, err := range errs {
		if i%2 == 1 {
			require.NoError(t, err, "Publish %d", i)
			continue
		}
		if err == nil {
			shared++
			continue
		}
		require.ErrorIs(t, err, wheelexpvar.ErrNameTaken, "Publish %d", i)
	}
	require.Equal(t, 1, shared, "one Publish of the shared name succeeds")
	vars := fetchVars(t)
	require.Contains(t, vars, "wheeltimer_test_shared")
	require.Contains(t, vars, "wheeltimer_test_own_b")
}
