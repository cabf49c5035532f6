package hashedwheel

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// httpInFlight is the number of requests BenchmarkHTTPClientChain keeps in
// flight.
const httpInFlight = 200

// BenchmarkHTTPClientChain measures the chain of a service calling
// another: a deadline per call, WithTimeout on the wheel, a
// context.WithValue on it, as tracing adds, and an http.Client call with
// that context to an httptest server, 200 calls in flight; beside the same
// chain on context.WithTimeout, in the same run. It reports the time per
// call over context.WithTimeout's ("x-WithTimeout") and the goroutines
// live per call in flight, beyond the 200 callers and the connections'
// own, for each ("goroutines/req", "std-goroutines/req"): the client's
// context.WithCancel of the WithValue joins the wheel context through a
// goroutine while the call lasts.
func BenchmarkHTTPClientChain(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	transport := &http.Transport{MaxIdleConns: httpInFlight, MaxIdleConnsPerHost: httpInFlight}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	h := startTimer(b)
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()

	wheel := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return h.WithTimeout(ctx, 5*time.Second)
	}
	std := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, 5*time.Second)
	}
	// Warm up both ways, so that every connection is open and idle.
	if _, _, err := httpCalls(parent, client, srv.URL, 2*httpInFlight, wheel); err != nil {
		b.Fatal(err)
	}
	if _, _, err := httpCalls(parent, client, srv.URL, 2*httpInFlight, std); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	wheelTime, wheelGoroutines, err := httpCalls(parent, client, srv.URL, b.N, wheel)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	stdTime, stdGoroutines, err := httpCalls(parent, client, srv.URL, b.N, std)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(wheelTime)/float64(stdTime), "x-WithTimeout")
	b.ReportMetric(wheelGoroutines, "goroutines/req")
	b.ReportMetric(stdGoroutines, "std-goroutines/req")
}

// httpKey is the key of the chain's value.
type httpKey struct{}

// httpCalls makes n GET calls to url, httpInFlight at a time, each with a
// context from withTimeout on parent wrapped in a WithValue. It returns
// the time they took, and the goroutines live beyond those at the start
// and the callers, read as each response arrives, per call in flight.
func httpCalls(parent context.Context, client *http.Client, url string, n int,
	withTimeout func(context.Context) (context.Context, context.CancelFunc)) (time.Duration, float64, error) {
	var next, samples, sum atomic.Int64
	var firstErr atomic.Pointer[error]
	base := runtime.NumGoroutine() + httpInFlight
	var wg sync.WaitGroup
	start := time.Now()
	for range httpInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := httpCall(parent, client, url, withTimeout, &samples, &sum, base); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := firstErr.Load(); err != nil {
		return 0, 0, *err
	}
	goroutines := 0.0
	if s := samples.Load(); s > 0 {
		goroutines = float64(sum.Load()) / float64(s) / httpInFlight
	}
	return elapsed, goroutines, nil
}

// httpCall makes one call of the chain and, while its context is live,
// adds the goroutines beyond base to sum.
func httpCall(parent context.Context, client *http.Client, url string,
	withTimeout func(context.Context) (context.Context, context.CancelFunc), samples, sum *atomic.Int64, base int) error {
	ctx, cancel := withTimeout(parent)
	defer cancel()
	ctx = context.WithValue(ctx, httpKey{}, "span")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	samples.Add(1)
	sum.Add(int64(runtime.NumGoroutine() - base))
	_, err = io.Copy(io.Discard, resp.Body)
	if closeErr := resp.Body.Close(); err == nil {
		err = closeErr
	}
	return err
}
