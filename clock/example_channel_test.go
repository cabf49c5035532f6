package clock_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wheeltimer/wheeltimer/clock"
)

// flushEvery is application code: it calls flush every period, on clk's
// ticker, until ctx is done.
func flushEvery(ctx context.Context, clk clock.Clock, period time.Duration, flush func()) {
	ticker := clk.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			flush()
		case <-ctx.Done():
			return
		}
	}
}

// syncWriter is a bytes.Buffer the flusher and the test share.
type syncWriter struct {
	mu         sync.Mutex
	pending    []string
	written    bytes.Buffer
	flushCount int
}

func (w *syncWriter) Write(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, s)
}

func (w *syncWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.pending {
		w.written.WriteString(s)
	}
	w.pending = nil
	w.flushCount++
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d flush: %q", w.flushCount, w.written.String())
}

// flushOnce runs flushEvery on fake time up to its first flush. Advance
// only sends the ticker's tick: the test waits for the flusher's own
// signal before it looks. Every waiter on the clock counts in
// BlockUntilContext, so it reads the count first.
func flushOnce(ctx context.Context, fake *clock.Fake, w *syncWriter) error {
	base := fake.Waiters() // every waiter counts: an Every job, a kept timeout
	flushed := make(chan struct{})
	go flushEvery(ctx, fake, time.Second, func() { w.Flush(); flushed <- struct{}{} })
	if err := fake.BlockUntilContext(ctx, base+1); err != nil { // its ticker
		return err
	}
	fake.Advance(time.Second) // sends the tick, and goes on
	<-flushed                 // the flusher's own signal: it has flushed
	return nil
}

// Advance sends on the channels of the Timers and Tickers due, and goes
// on: the goroutine that receives runs after it. A test of a flusher on a
// ticker waits for the flusher's own signal before it looks; it waits
// for the ticker with BlockUntilContext, counting from the waiters already
// there (here a timer left armed).
func ExampleFake_Advance_channel() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	defer fake.NewTimer(time.Hour).Stop() // a waiter already there
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &syncWriter{}
	w.Write("hello")
	if err := flushOnce(ctx, fake, w); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w)
	// Output: 1 flush: "hello"
}
