// Command library is what a user builds after
// `go get github.com/wheeltimer/wheeltimer` alone: a timeout that fires,
// a context that reaches its deadline, a fake clock, and the Stats
// published through the expvar exporter, a package of the library.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"os"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
	wheelexpvar "github.com/wheeltimer/wheeltimer/exporters/expvar"
	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(1)
	}
}

func run() error {
	timer, err := hashedwheel.New()
	if err != nil {
		return err
	}
	defer timer.Stop()
	fired := make(chan struct{})
	if _, err := timer.AfterFunc(10*time.Millisecond, func() { close(fired) }); err != nil {
		return err
	}
	ctx, cancel := timer.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	bound := time.After(10 * time.Second)
	select {
	case <-fired:
	case <-bound:
		return errors.New("the timeout never fired")
	}
	select {
	case <-ctx.Done():
	case <-bound:
		return errors.New("the context never reached its deadline")
	}

	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	woke := make(chan time.Time)
	go func() { woke <- <-fake.After(time.Minute) }()
	if err := fake.BlockUntilContext(ctx, 1); err == nil {
		return errors.New("BlockUntilContext ignored a done context")
	}
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := fake.BlockUntilContext(wait, 1); err != nil {
		return err
	}
	fake.Advance(time.Minute)

	if err := wheelexpvar.Publish("timer", timer); err != nil {
		return err
	}
	var stats struct{ Scheduled, Expired int }
	if err := json.Unmarshal([]byte(expvar.Get("timer").String()), &stats); err != nil {
		return err
	}
	if stats.Scheduled != 2 {
		return fmt.Errorf("expvar: scheduled %d, expected 2", stats.Scheduled)
	}
	fmt.Printf("library: a timeout fired, a context %v, a fake After woke at %s, expvar scheduled=%d\n",
		ctx.Err(), (<-woke).Format(time.TimeOnly), stats.Scheduled)
	return nil
}
