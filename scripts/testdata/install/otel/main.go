// Command otel is what a user builds after
// `go get github.com/wheeltimer/wheeltimer/exporters/otel` alone: a
// timer's Stats read through an OpenTelemetry SDK reader.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	wheelotel "github.com/wheeltimer/wheeltimer/exporters/otel"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "otel:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	timer, err := hashedwheel.New()
	if err != nil {
		return err
	}
	defer timer.Stop()
	if _, err := timer.AfterFunc(time.Hour, func() {}); err != nil {
		return err
	}
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(ctx)
	reg, err := wheelotel.Register(provider.Meter("install-check"), "orders", timer)
	if err != nil {
		return err
	}
	defer reg.Unregister()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "hashedwheel.pending" {
				p := sum.DataPoints[0]
				fmt.Printf("otel: %s %v %d\n", m.Name, p.Attributes.ToSlice(), p.Value)
				if p.Value != 1 {
					return fmt.Errorf("pending %d, expected 1", p.Value)
				}
				return nil
			}
		}
	}
	return fmt.Errorf("no hashedwheel.pending sum among %d scopes", len(rm.ScopeMetrics))
}
