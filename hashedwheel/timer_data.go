package hashedwheel

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/internal/antspool"
	"github.com/wheeltimer/wheeltimer/internal/clockwork"
	"github.com/wheeltimer/wheeltimer/mpsc"
	"github.com/wheeltimer/wheeltimer/pool"
)

// The timer's data: the HashedWheelTimer and its shards, which the code
// of every layer above reads, declared below it all (docs/design.md, the
// files in layers).

// The states of a HashedWheelTimer, as Netty's WORKER_STATE_*.
const (
	timerInit int32 = iota
	timerStarted
	timerStopped
)

// HashedWheelTimer is a Timer backed by a hashed wheel and one worker
// goroutine. Make one with New; its methods are safe for concurrent use.
// The zero value is a timer with the default options, as New() makes.
//
// A timer is meant to be shared: each holds a goroutine and, by default, a
// goroutine pool, so an application needs few of them. Call Stop when done.
type HashedWheelTimer struct {
	// Read by every NewTimeout; written only at start and stop, or, for
	// idle, when the worker falls asleep until the next due timeout.
	state      atomic.Int32
	idle       atomic.Bool // the worker sleeps past its next tick: producers must wake it
	clock      clock.Clock
	startNanos int64 // clock reading at start
	tickNanos  int64
	shards     []shard
	shardMask  uint32
	spread     atomic.Bool // producers have met on a stack: new timeouts go by processor (pushTimeout)
	maxPending int64
	sleeper    clockwork.Sleeper
	watcher    clockwork.Watcher // the sleeper, on a clock.Fake: told of each accepted timeout; else nil

	_ cpu.CacheLinePad

	admitted atomic.Int64 // pending timeouts; kept only with a limit
	counters counters

	startMu      sync.Mutex
	config       config
	executor     pool.Executor
	internalPool *antspool.Pool // the pool Start made, which Stop releases; nil with WithExecutor
	worker       *worker
	workerID     atomic.Uint64 // goroutine id of the worker
	done         chan struct{} // closed when the worker has exited
	stopResult   []Timeout     // written by the worker before done closes; taken by the first Stop after
	releaseOnce  sync.Once
	released     chan struct{} // closed once every task has returned and the own pool is gone
	bubble       uint64        // the testing/synctest bubble New ran in; 0: none
	probeBubble  bool          // made outside every bubble, on a clock not the runtime's: check each schedule
}

// shard is one of the ways by which producers reach the worker: an intake
// stack for new timeouts, and queues of the timeouts in a bucket that
// Cancel cancelled or Reset moved earlier. A new timeout goes onto the
// intake stack of its page's shard, or, once producers have met on one,
// of the calling processor's (see pushTimeout), so that goroutines running
// at once push onto different stacks; a timeout in a bucket is reported on
// the queue of the shard its address picks (see shardOf). The worker
// serves them all.
//
// The intake stack is described in intake.go, which holds its code.
type shard struct {
	_   cpu.CacheLinePad
	top atomic.Pointer[timeout] // newest timeout, a sentinel, or closedIntake
	_   cpu.CacheLinePad

	// Written by the worker alone.
	collected atomic.Uint64        // timeouts collected off the stack so far
	bottom    *timeout             // the sentinel swapped in by the last collect
	cancelled *mpsc.Queue[timeout] // timeouts in a bucket that Cancel cancelled, each once
	moved     *mpsc.Queue[timeout] // timeouts in a bucket that Reset moved earlier
}

// instances counts running timers, to warn once when an application makes
// too many of them (as Netty does above 64).
var (
	instances     atomic.Int64
	warnInstances sync.Once
)

const instanceWarnLimit = 64

func countInstance(logger *slog.Logger) {
	if instances.Add(1) > instanceWarnLimit {
		warnInstances.Do(func() {
			logger.Error("hashedwheel: more than 64 timers are running; a timer is meant to be shared, not made per use",
				"running", instances.Load())
		})
	}
}
