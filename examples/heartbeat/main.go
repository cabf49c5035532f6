// Command heartbeat shows idle-connection detection, the job Netty's
// IdleStateHandler does with a HashedWheelTimer.
//
// A TCP server on 127.0.0.1 gives each connection a timeout of -idle. Every
// message that arrives moves the timeout's deadline to -idle from now with
// Reset, so only a connection that stays silent for longer than -idle lets
// its timeout fire, and the timeout's task closes it. A client opens -conns
// connections; a fraction -quiet of them send one message and go silent,
// the others send a heartbeat every -interval for -duration and then hang
// up. The report says how many connections the server closed (it should be
// exactly the quiet ones), and how late after the idle timeout it closed
// them: never early, and about one tick late.
//
// Each connection holds one timeout for its whole life: moving its deadline
// later allocates nothing and costs the timer's worker nothing, and only the
// connection's own goroutine touches the handle, so it needs no lock. The
// per-connection state is itself the TimerTask.
//
//	go run ./examples/heartbeat [-conns 3000] [-quiet 0.5] [-idle 1s] [-interval 250ms] [-duration 3s]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

type config struct {
	Addr     string        // where the server listens
	Conns    int           // connections the client opens
	Quiet    float64       // fraction of them that go silent after one message
	Idle     time.Duration // the server closes a connection silent for longer
	Interval time.Duration // between heartbeats of the live connections
	Duration time.Duration // how long the live connections keep beating
	Tick     time.Duration // the timer's tick
}

func defaultConfig() config {
	return config{
		Addr:     "127.0.0.1:0",
		Conns:    3000,
		Quiet:    0.5,
		Idle:     time.Second,
		Interval: 250 * time.Millisecond,
		Duration: 3 * time.Second,
		Tick:     10 * time.Millisecond,
	}
}

func main() {
	cfg := defaultConfig()
	flag.StringVar(&cfg.Addr, "addr", cfg.Addr, "address the server listens on")
	flag.IntVar(&cfg.Conns, "conns", cfg.Conns, "connections the client opens")
	flag.Float64Var(&cfg.Quiet, "quiet", cfg.Quiet, "fraction of the connections that go silent after one message")
	flag.DurationVar(&cfg.Idle, "idle", cfg.Idle, "idle timeout: the server closes a connection silent for longer")
	flag.DurationVar(&cfg.Interval, "interval", cfg.Interval, "heartbeat interval of the live connections")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long the live connections keep beating")
	flag.DurationVar(&cfg.Tick, "tick", cfg.Tick, "tick duration of the timer")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heartbeat:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, cfg)
	if err := r.check(cfg.Idle); err != nil {
		fmt.Fprintln(os.Stderr, "heartbeat:", err)
		os.Exit(1)
	}
}

// report is what a run observed, on both sides of the connections.
type report struct {
	Addr         string
	Quiet, Alive int // connections of each kind the client opened
	// Seen by the client: connections the server closed under it.
	QuietClosed, AliveClosed int
	// Seen by the client: how long after its one message each quiet
	// connection was closed.
	QuietAfter []time.Duration
	// Seen by the server.
	IdleClosed int             // connections closed by an idle timeout
	Messages   int64           // messages received: each moved an idle deadline
	Resets     int64           // of them, deadlines moved by Reset
	Renewed    int64           // of them, timeouts replaced because Reset did not move them
	Lateness   []time.Duration // of each idle close, after last message + idle
	Stats      hashedwheel.Stats
	Leftover   int // timeouts still pending at the end
}

// check reports what went wrong, if anything.
func (r *report) check(idle time.Duration) error {
	var errs []error
	if r.QuietClosed != r.Quiet {
		errs = append(errs, fmt.Errorf("%d of %d quiet connections were closed", r.QuietClosed, r.Quiet))
	}
	if r.AliveClosed != 0 {
		errs = append(errs, fmt.Errorf("%d live connections were closed", r.AliveClosed))
	}
	if r.IdleClosed != r.Quiet {
		errs = append(errs, fmt.Errorf("the server closed %d idle connections, want %d", r.IdleClosed, r.Quiet))
	}
	if len(r.Lateness) > 0 && slices.Min(r.Lateness) < 0 {
		errs = append(errs, fmt.Errorf("a connection was closed %v before its idle timeout", -slices.Min(r.Lateness)))
	}
	if len(r.QuietAfter) > 0 && slices.Min(r.QuietAfter) < idle {
		errs = append(errs, fmt.Errorf("a quiet connection was closed %v after its message, before the idle timeout %v", slices.Min(r.QuietAfter), idle))
	}
	if r.Leftover != 0 {
		errs = append(errs, fmt.Errorf("%d timeouts were still pending at the end", r.Leftover))
	}
	return errors.Join(errs...)
}

func (r *report) print(w io.Writer, cfg config) {
	fmt.Fprintf(w, "server on %s closes connections idle for more than %v (timer tick %v)\n", r.Addr, cfg.Idle, cfg.Tick)
	fmt.Fprintf(w, "client opened %d connections:\n", r.Quiet+r.Alive)
	fmt.Fprintf(w, "  %5d sent a heartbeat every %v for %v: %d closed by the server\n", r.Alive, cfg.Interval, cfg.Duration, r.AliveClosed)
	fmt.Fprintf(w, "  %5d went quiet after one message:      %d closed by the server\n", r.Quiet, r.QuietClosed)
	fmt.Fprintf(w, "server received %d messages; each moved its connection's idle deadline (Reset: %d, new timeout: %d)\n",
		r.Messages, r.Resets, r.Renewed)
	if len(r.Lateness) > 0 {
		l := slices.Sorted(slices.Values(r.Lateness))
		fmt.Fprintf(w, "idle connections closed after the idle timeout by: min %v, p50 %v, p99 %v, max %v\n",
			round(l[0]), round(l[len(l)/2]), round(l[len(l)*99/100]), round(l[len(l)-1]))
	}
	s := r.Stats
	fmt.Fprintf(w, "timer: %d timeouts scheduled, %d cancelled, %d expired, %d pending; %d ticks\n",
		s.Scheduled, s.Cancelled, s.Expired, s.Pending, s.Ticks)
	if err := r.check(cfg.Idle); err != nil {
		fmt.Fprintln(w, "FAILED:", err)
	} else {
		fmt.Fprintln(w, "ok: exactly the quiet connections were closed, none before its idle timeout")
	}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

// run starts the server, runs the client against it, shuts both down and
// returns what they saw.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Conns < 1 || cfg.Quiet < 0 || cfg.Quiet > 1 || cfg.Idle <= 0 || cfg.Interval <= 0 {
		return nil, fmt.Errorf("invalid configuration %+v", cfg)
	}
	timer, err := hashedwheel.New(hashedwheel.WithTickDuration(cfg.Tick))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		timer.Stop()
		return nil, err
	}
	srv := newServer(ln, timer, cfg.Idle)
	go srv.serve()

	r := &report{Addr: ln.Addr().String()}
	cerr := runClient(ctx, cfg, r)

	srv.shutdown()
	r.Leftover = len(timer.Stop())
	r.IdleClosed = int(srv.idleClosed.Load())
	r.Messages, r.Resets, r.Renewed = srv.messages.Load(), srv.resets.Load(), srv.renewed.Load()
	srv.mu.Lock()
	r.Lateness = slices.Clone(srv.lateness)
	srv.mu.Unlock()
	r.Stats = timer.Stats()
	return r, cerr
}

// server is a TCP server that closes idle connections.
type server struct {
	ln    net.Listener
	timer *hashedwheel.HashedWheelTimer
	idle  time.Duration
	start time.Time // the origin of the connections' last-message times
	wg    sync.WaitGroup

	mu       sync.Mutex
	conns    map[*serverConn]struct{}
	lateness []time.Duration

	idleClosed atomic.Int64
	messages   atomic.Int64
	resets     atomic.Int64
	renewed    atomic.Int64
}

func newServer(ln net.Listener, timer *hashedwheel.HashedWheelTimer, idle time.Duration) *server {
	return &server{ln: ln, timer: timer, idle: idle, start: time.Now(), conns: map[*serverConn]struct{}{}}
}

// now is the monotonic time since the server started.
func (s *server) now() time.Duration { return time.Since(s.start) }

func (s *server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		sc := &serverConn{Conn: c, srv: s}
		s.mu.Lock()
		s.conns[sc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go sc.handle()
	}
}

// shutdown stops accepting, closes the connections still open, and waits
// for their handlers.
func (s *server) shutdown() {
	s.ln.Close()
	s.mu.Lock()
	for sc := range s.conns {
		sc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serverConn is one connection on the server, and the TimerTask of its idle
// timeout.
type serverConn struct {
	net.Conn
	srv  *server
	last atomic.Int64 // server.now() when the deadline was last moved: the last sign of life
}

func (c *serverConn) handle() {
	defer c.srv.wg.Done()
	defer func() {
		c.srv.mu.Lock()
		delete(c.srv.conns, c)
		c.srv.mu.Unlock()
	}()
	defer c.Close()
	c.last.Store(int64(c.srv.now()))
	idle, err := c.srv.timer.NewTimeout(c, c.srv.idle)
	if err != nil {
		return
	}
	r := bufio.NewReader(c)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			break // the peer hung up, or the idle timeout closed the connection
		}
		c.srv.messages.Add(1)
		if idle = c.rearm(idle); idle == nil {
			return // the idle timeout fired: the connection is being closed
		}
	}
	idle.Cancel() // the peer hung up first: the idle timeout is not needed
}

// rearm moves the idle deadline guarded by t to the idle timeout from now.
// It returns the timeout that now guards the connection, or nil if t has
// fired.
func (c *serverConn) rearm(t hashedwheel.Timeout) hashedwheel.Timeout {
	now := c.srv.now()
	if t.Reset(c.srv.idle) {
		// Stored after Reset, so that the task, which cannot run before the
		// new deadline, never sees a last sign of life newer than it.
		c.last.Store(int64(now))
		c.srv.resets.Add(1)
		return t
	}
	// Reset changed nothing. If Cancel fails too, the timeout has fired;
	// if it succeeds, the timeout had not, and a new one replaces it.
	if !t.Cancel() {
		return nil
	}
	next, err := c.srv.timer.NewTimeout(c, c.srv.idle)
	if err != nil {
		return nil
	}
	c.last.Store(int64(now))
	c.srv.renewed.Add(1)
	return next
}

// Run is called by the timer when the connection has been silent for the
// idle timeout: it closes the connection.
func (c *serverConn) Run(hashedwheel.Timeout) {
	late := c.srv.now() - time.Duration(c.last.Load()) - c.srv.idle
	// Count before closing, so that a client that sees the close sees it
	// counted.
	c.srv.idleClosed.Add(1)
	c.srv.mu.Lock()
	c.srv.lateness = append(c.srv.lateness, late)
	c.srv.mu.Unlock()
	c.Close()
}

// runClient opens the connections, lets the live ones beat for
// cfg.Duration and the quiet ones wait for the server to close them, and
// counts in r what happened.
func runClient(ctx context.Context, cfg config, r *report) error {
	quiet := int(float64(cfg.Conns)*cfg.Quiet + 0.5)
	r.Quiet, r.Alive = quiet, cfg.Conns-quiet

	// Dial everything first, a few at a time, so that every live connection
	// beats for the whole duration.
	conns := make([]net.Conn, cfg.Conns)
	var dialErr error
	var mu sync.Mutex
	parallel(16, cfg.Conns, func(i int) {
		c, err := net.Dial("tcp", r.Addr)
		if err != nil {
			mu.Lock()
			dialErr = errors.Join(dialErr, err)
			mu.Unlock()
			return
		}
		conns[i] = c
	})
	if dialErr != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return fmt.Errorf("dial: %w", dialErr)
	}

	var quietClosed, aliveClosed atomic.Int64
	quietAfter := make([]time.Duration, quiet)
	end := time.Now().Add(cfg.Duration)
	// A quiet connection waits at most this long for the server to close it.
	giveUp := time.Now().Add(cfg.Duration + cfg.Idle + 10*time.Second)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			if i < quiet {
				if after, closed := waitQuiet(ctx, c, giveUp); closed {
					quietAfter[i] = after
					quietClosed.Add(1)
				}
			} else if beat(ctx, c, cfg.Interval, end) {
				aliveClosed.Add(1)
			}
		}()
	}
	wg.Wait()
	r.QuietClosed, r.AliveClosed = int(quietClosed.Load()), int(aliveClosed.Load())
	for _, d := range quietAfter {
		if d > 0 {
			r.QuietAfter = append(r.QuietAfter, d)
		}
	}
	return ctx.Err()
}

// waitQuiet sends one message and reports whether the server then closed
// the connection before giveUp, and how long after the message it did.
func waitQuiet(ctx context.Context, c net.Conn, giveUp time.Time) (time.Duration, bool) {
	sent := time.Now() // before the write: the server cannot see the message earlier
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		return 0, false
	}
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	c.SetReadDeadline(giveUp)
	_, err := c.Read(make([]byte, 1))
	// EOF, or a reset: the server closed it. A deadline: it did not.
	return time.Since(sent), err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// beat sends a heartbeat every interval until end, and reports whether the
// server closed the connection meanwhile.
func beat(ctx context.Context, c net.Conn, interval time.Duration, end time.Time) (closedByServer bool) {
	// The server never writes: a read returns only when the server closes
	// the connection, or when we close it at the end.
	var hungUp atomic.Bool
	readDone := make(chan bool, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		readDone <- err != nil && !hungUp.Load()
	}()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	finished := time.NewTimer(time.Until(end))
	defer finished.Stop()
	for {
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			return true // the server closed it
		}
		select {
		case <-ticker.C:
			continue
		case closed := <-readDone:
			return closed
		case <-finished.C:
		case <-ctx.Done():
		}
		hungUp.Store(true)
		c.Close()
		return <-readDone
	}
}

// parallel calls f(i) for every i in [0, n) from p goroutines.
func parallel(p, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}
