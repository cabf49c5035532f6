// Command prometheus is what a user builds after
// `go get github.com/wheeltimer/wheeltimer/exporters/prometheus` alone: a
// timer's Stats gathered from a registry.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	wheelprom "github.com/wheeltimer/wheeltimer/exporters/prometheus"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "prometheus:", err)
		os.Exit(1)
	}
}

func run() error {
	timer, err := hashedwheel.New()
	if err != nil {
		return err
	}
	defer timer.Stop()
	if _, err := timer.AfterFunc(time.Hour, func() {}); err != nil {
		return err
	}
	collector, err := wheelprom.NewCollector("orders", timer)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(collector); err != nil {
		return err
	}
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, f := range families {
		if f.GetName() == "hashedwheel_pending" {
			m := f.GetMetric()[0]
			fmt.Printf("prometheus: hashedwheel_pending{%s=%q} %v\n", m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
			if m.GetGauge().GetValue() != 1 {
				return fmt.Errorf("pending %v, expected 1", m.GetGauge().GetValue())
			}
			return nil
		}
	}
	return fmt.Errorf("no hashedwheel_pending among %d metrics", len(families))
}
