package otel_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wheeltimer/wheeltimer/clock"
	wheelotel "github.com/wheeltimer/wheeltimer/exporters/otel"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// A timer's Stats through a meter, and its Lateness through a Producer
// given to the same reader.
func ExampleProducer() {
	lateness := wheelotel.NewProducer()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(lateness)) // or NewPeriodicReader(exporter, …)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	timer, err := hashedwheel.New(hashedwheel.WithClock(clock.NewFake(time.Now())))
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	stats, err := wheelotel.Register(provider.Meter("orders"), "orders", timer)
	if err != nil {
		panic(err)
	}
	defer stats.Unregister()
	late, err := lateness.Register("orders", timer)
	if err != nil {
		panic(err)
	}
	defer late.Unregister()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				fmt.Println(m.Name, m.Unit, len(h.DataPoints), "points,", len(h.DataPoints[0].Bounds), "bounds")
			}
		}
	}
	// Output:
	// hashedwheel.lateness s 3 points, 105 bounds
}
