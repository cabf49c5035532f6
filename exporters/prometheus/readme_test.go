package prometheus_test

// The README's snippet, as it shows it, imports included: the test that
// runs it is TestCollectorScrapedOverHTTP.

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	wheelprom "github.com/wheeltimer/wheeltimer/exporters/prometheus"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// serveMetrics registers the timer's collector and serves reg at /metrics.
func serveMetrics(mux *http.ServeMux, reg *prometheus.Registry, timer *hashedwheel.HashedWheelTimer) error {
	collector, err := wheelprom.NewCollector("orders", timer)
	if err != nil {
		return err
	}
	if err := reg.Register(collector); err != nil {
		return err // a collector named "orders" is registered already
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return nil
}
