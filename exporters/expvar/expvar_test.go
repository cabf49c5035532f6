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
	require.NoError(t, wheelexpvar.Publish("wheeltimer_test_served", timer))
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
}

// TestPublishTwiceTakesTheNameOver: a second Publish of a name returns
// nil, and the variable reads the second timer.
func TestPublishTwiceTakesTheNameOver(t *testing.T) {
	require.NoError(t, wheelexpvar.Publish("wheeltimer_test_twice", fixed{Scheduled: 1}))
	require.NoError(t, wheelexpvar.Publish("wheeltimer_test_twice", fixed{Scheduled: 2, MaxTickLag: 1500 * time.Millisecond}))
	raw := fetchVars(t)["wheeltimer_test_twice"]
	var got map[string]float64
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, 2.0, got["scheduled"], "%s", raw)
	require.Equal(t, 1.5, got["max_tick_lag_seconds"], "%s", raw)
}

// TestPublishRefusesANameTakenByOtherCode: a name published with expvar
// by other code is refused with ErrNameTaken, and left as it was.
func TestPublishRefusesANameTakenByOtherCode(t *testing.T) {
	other := expvar.NewInt("wheeltimer_test_taken")
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

// TestPublishConcurrently: goroutines publishing one new name and names
// of their own at once all succeed, and never panic.
func TestPublishConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			name := "wheeltimer_test_shared"
			if i%2 == 1 {
				name = "wheeltimer_test_own_" + string(rune('a'+i))
			}
			errs[i] = wheelexpvar.Publish(name, fixed{Scheduled: uint64(i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "Publish %d", i)
	}
	vars := fetchVars(t)
	require.Contains(t, vars, "wheeltimer_test_shared")
	require.Contains(t, vars, "wheeltimer_test_own_b")
}
