package hashedwheel_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// The README's snippets, each verbatim in a function of this file, so that
// it compiles as written, and run by TestReadmeSnippets. The README test
// in internal/readme checks that every snippet of the README is in a test
// file. What a snippet leaves to the reader (a connection, a message
// stream, a metrics sink, a backend) is a parameter or a stand-in here.

// readmeNew is the README's first snippet: a timer with the defaults.
func readmeNew() error {
	timer, err := hashedwheel.New() // a 1ms tick; options below
	if err != nil {
		return err
	}
	defer timer.Stop()
	return nil
}

// readmeAfterFunc schedules a connection's close, and cancels it.
func readmeAfterFunc(timer *hashedwheel.HashedWheelTimer, conn net.Conn) error {
	deadline, err := timer.AfterFunc(2*time.Second, func() { conn.Close() })
	if err != nil {
		return err // ErrStopped or ErrTooManyPendingTimeouts
	}
	// ... the response arrived in time:
	deadline.Cancel()
	return nil
}

type closeIdle struct {
	conn net.Conn
	kept *atomic.Int64
}

func (c closeIdle) Run(hashedwheel.Timeout)       { c.conn.Close() }
func (c closeIdle) Cancelled(hashedwheel.Timeout) { c.kept.Add(1) }

// readmeNewTimeout is Netty's form: the timeout is cancelled as the
// function returns, and its hook counts it in *counted.
func readmeNewTimeout(timer *hashedwheel.HashedWheelTimer, conn net.Conn, counted **atomic.Int64) error {
	var kept atomic.Int64 // connections whose idle timeout was cancelled
	idle, err := timer.NewTimeout(closeIdle{conn, &kept}, 30*time.Second)
	if err != nil {
		return err
	}
	defer idle.Cancel()
	*counted = &kept
	return nil
}

// subscriber is what a broadcast went to; Drop ends its subscription.
type subscriber struct{ dropped atomic.Bool }

func (s *subscriber) Drop() { s.dropped.Store(true) }

// readmeNewTimeouts awaits the acknowledgement of a broadcast from each
// subscriber, for 5s: acked gives the index of each that acknowledges.
func readmeNewTimeouts(timer *hashedwheel.HashedWheelTimer, subscribers []*subscriber, acked <-chan int) error {
	tasks := make([]hashedwheel.TimerTask, len(subscribers))
	for i, s := range subscribers {
		tasks[i] = hashedwheel.TaskFunc(func(hashedwheel.Timeout) { s.Drop() })
	}
	acks, err := timer.NewTimeouts(5*time.Second, tasks...)
	if err != nil {
		return err // none was scheduled
	}
	for i := range acked { // the index of each subscriber that acknowledged
		acks[i].Cancel()
	}
	return nil
}

// readmeReset re-arms an idle timeout for every message.
func readmeReset(timer *hashedwheel.HashedWheelTimer, conn net.Conn, messages <-chan string, handle func(string)) error {
	idle, err := timer.AfterFunc(30*time.Second, func() { conn.Close() })
	if err != nil {
		return err
	}
	defer idle.Cancel() // the loop may end before the timeout
	for msg := range messages {
		if !idle.Reset(30 * time.Second) {
			return nil // closed for idleness already
		}
		handle(msg)
	}
	return nil
}

// flusher stands for a metrics sink.
type flusher struct{ flushes atomic.Int64 }

func (f *flusher) Flush() { f.flushes.Add(1) }

// readmeEvery flushes metrics every second while live runs.
func readmeEvery(timer *hashedwheel.HashedWheelTimer, metrics *flusher, live func()) error {
	flush, err := timer.Every(time.Second, metrics.Flush)
	if err != nil {
		return err
	}
	defer flush.Cancel()
	live()
	return nil
}

// backend stands for what a handler passes its context to.
type backend struct{ work time.Duration }

func (b backend) Call(ctx context.Context) error {
	select {
	case <-time.After(b.work):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type server struct {
	timer   *hashedwheel.HashedWheelTimer
	backend backend
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.timer.WithTimeout(r.Context(), 100*time.Millisecond)
	defer cancel() // releases the timeout at once
	if err := s.backend.Call(ctx); errors.Is(err, context.DeadlineExceeded) {
		http.Error(w, "too slow", http.StatusGatewayTimeout)
	}
}

// closeConn is a net.Conn that records its Close, all the snippets call.
type closeConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeConn) Close() error {
	c.closed.Store(true)
	return nil
}

// TestReadmeSnippets runs each snippet of the README in fake time.
func TestReadmeSnippets(t *testing.T) {
	require.NoError(t, readmeNew())
	synctest.Test(t, func(t *testing.T) {
		timer, err := hashedwheel.New()
		require.NoError(t, err)
		defer timer.Stop()
		conn := &closeConn{}

		require.NoError(t, readmeAfterFunc(timer, conn))
		time.Sleep(3 * time.Second) // the bubble's fake time
		assert.False(t, conn.closed.Load(), "cancelled: the connection stays open")

		var kept *atomic.Int64
		require.NoError(t, readmeNewTimeout(timer, conn, &kept))
		time.Sleep(time.Millisecond) // a tick: the worker processes the cancellation
		synctest.Wait()
		assert.Equal(t, int64(1), kept.Load(), "the Cancelled hook ran")

		subscribers := []*subscriber{{}, {}, {}}
		acked := make(chan int, 2)
		acked <- 0
		acked <- 2
		close(acked)
		require.NoError(t, readmeNewTimeouts(timer, subscribers, acked))
		time.Sleep(6 * time.Second)
		synctest.Wait()
		for i, want := range []bool{false, true, false} {
			assert.Equal(t, want, subscribers[i].dropped.Load(), "subscriber %d dropped", i)
		}

		messages := make(chan string, 3)
		messages <- "a"
		messages <- "b"
		close(messages)
		var handled []string
		require.NoError(t, readmeReset(timer, conn, messages, func(m string) { handled = append(handled, m) }))
		assert.Equal(t, []string{"a", "b"}, handled)

		var metrics flusher
		require.NoError(t, readmeEvery(timer, &metrics, func() { time.Sleep(3500 * time.Millisecond) }))
		assert.Equal(t, int64(3), metrics.flushes.Load())

		for work, want := range map[time.Duration]int{time.Millisecond: http.StatusOK, time.Second: http.StatusGatewayTimeout} {
			rec := httptest.NewRecorder()
			(&server{timer: timer, backend: backend{work}}).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			assert.Equal(t, want, rec.Code, "a backend taking %v", work)
		}
		time.Sleep(time.Millisecond) // a tick: the worker processes the last cancellation
		synctest.Wait()
		assert.Zero(t, timer.PendingTimeouts(), "every snippet releases its timeouts")
		assert.False(t, conn.closed.Load(), "no idle timeout fired")
	})
}
