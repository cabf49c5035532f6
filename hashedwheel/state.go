package hashedwheel

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// A timeout's state word holds its deadline and its state, so that Cancel,
// Reset and the worker's claim each decide with one compare-and-swap of one
// word: a claim that read a deadline fails if a Reset moved it meanwhile.
//
//	queued ──worker takes it in──▶ scheduled ──worker claims it──▶ expired
//	   │                              │
//	   └──Cancel or Stop──▶ cancelled ◀──Cancel or Stop──┘
//
// Reset rewrites the deadline of a queued or scheduled timeout and keeps
// its state. A periodic timeout stays scheduled, its runs marked by two
// bits (see periodic.go): each claim of a run advances its deadline to the
// next run's, and claimedBit and runningBit say whether a run waits to
// start and whether one is running.
const (
	stateQueued    uint64 = iota // on an intake stack or staged, not yet in a bucket
	stateScheduled               // linked in a bucket by the worker
	stateCancelled               // cancelled; the task will never run
	stateExpired                 // claimed by the worker; the task runs

	stateMask  = 1<<2 - 1
	claimedBit = 1 << 2  // a periodic timeout's run is claimed and waits to start
	runningBit = 1 << 63 // a periodic timeout's run is running
	flagsMask  = stateMask | claimedBit | runningBit

	// deadlineShift puts the deadline above the state, in units of 8ns, in
	// the 60 bits below runningBit: any deadline an int64 of nanoseconds
	// holds, the last unit standing for math.MaxInt64.
	deadlineShift = 3
	deadlineUnit  = 1 << deadlineShift
	maxDeadlineQ  = 1<<60 - 1
)

func stateOf(word uint64) uint64 { return word & stateMask }

// deadlineOf returns the deadline held in word, in nanoseconds after the
// timer's start.
func deadlineOf(word uint64) int64 {
	q := word >> deadlineShift & maxDeadlineQ
	if q == maxDeadlineQ {
		return math.MaxInt64
	}
	return int64(q << deadlineShift)
}

// withDeadline returns word with its deadline replaced by d, which is not
// negative, rounded up to a multiple of 8ns: never earlier than d.
func withDeadline(word uint64, d int64) uint64 {
	q := min((uint64(d)+deadlineUnit-1)>>deadlineShift, maxDeadlineQ)
	return q<<deadlineShift | word&flagsMask
}

// withState returns word with its state replaced by s.
func withState(word, s uint64) uint64 { return word&^stateMask | s }

// timeout is the Timeout of a HashedWheelTimer, and the node of its intake
// stack and of its bucket list. Its size is 64 bytes: one allocation class,
// one cache line.
type timeout struct {
	timer *HashedWheelTimer
	task  TimerTask
	word  atomic.Uint64 // deadline and state

	// While queued, prev links the timeout to the node below it on its
	// shard's intake stack and seq counts it among the shard's pushes; both
	// are written before it is published. Producers may read prev of the
	// top of a stack, so it is cleared atomically (forgetBelow). Once the
	// worker has taken the timeout in, next and prev link it in its bucket,
	// and they, seq and bucket are the worker's alone.
	next, prev *timeout
	seq        uint32
	bucket     uint32 // 1 + the index of the bucket that links it; 0 if none

	period int64 // nanoseconds between the runs of a periodic timeout; scheduledPeriod for ScheduleFunc's; 0 if one-shot
}

// currentState returns the state, without the deadline.
func (t *timeout) currentState() uint64 { return stateOf(t.word.Load()) }

// below returns the node below the timeout on its intake stack.
func (t *timeout) below() *timeout {
	return (*timeout)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev))))
}

// forgetBelow clears the timeout's link to the node below it on its intake
// stack, so that a caller keeping the timeout keeps nothing else alive.
// Producers may be reading it, hence the atomic store.
func (t *timeout) forgetBelow() {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&t.prev)), nil)
}
