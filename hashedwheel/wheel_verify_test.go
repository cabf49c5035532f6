package hashedwheel

import (
	"fmt"
	"math"
)

// verify checks the wheel's invariants: the occupied bits are set exactly
// for the non-empty buckets; the buckets' lists are well linked, and each
// timeout in one records it and is scheduled or cancelled; the lists hold
// size timeouts in all; and, unless exact is false, no scheduled timeout is
// due before its bucket's bound or before earliest. exact is false while a
// Reset that moved a deadline earlier waits, reported, for the worker to
// file the timeout again. Call it only while the worker is not running.
func (wh *wheel) verify(exact bool) error {
	linked := 0
	for i := range wh.buckets {
		b := &wh.buckets[i]
		occupied := wh.occupied[i>>6]&(1<<(i&63)) != 0
		if occupied != (b.head != nil) {
			return fmt.Errorf("bucket %d: occupied bit %v, head %p", i, occupied, b.head)
		}
		var prev *timeout
		for t := b.head; t != nil; prev, t = t, t.next {
			linked++
			if t.prev != prev {
				return fmt.Errorf("bucket %d: %v links back to %p, not %p", i, t, t.prev, prev)
			}
			if t.bucket != uint32(i)+1 {
				return fmt.Errorf("bucket %d holds %v, which records bucket %d", i, t, int(t.bucket)-1)
			}
			w := t.word.Load()
			switch stateOf(w) {
			case stateScheduled:
			case stateCancelled:
				continue // its cancellation, reported, unlinks it
			default:
				return fmt.Errorf("bucket %d holds %v in state %d", i, t, stateOf(w))
			}
			tick := deadlineOf(w) / wh.tickDuration
			if exact && tick < b.minDue && tick >= wh.tick {
				return fmt.Errorf("bucket %d holds %v due in tick %d, before its bound %d", i, t, tick, b.minDue)
			}
			if exact && tick < wh.earliest && tick >= wh.tick {
				return fmt.Errorf("%v is due in tick %d, before earliest %d", t, tick, wh.earliest)
			}
		}
		if b.tail != prev {
			return fmt.Errorf("bucket %d: tail %p, last %p", i, b.tail, prev)
		}
		if b.head == nil && b.minDue != math.MaxInt64 {
			return fmt.Errorf("empty bucket %d has the bound %d", i, b.minDue)
		}
	}
	if linked != wh.size {
		return fmt.Errorf("the buckets link %d timeouts, size is %d", linked, wh.size)
	}
	return nil
}

// verifyWheel checks h's wheel, exactly unless a Reset that moved a
// deadline earlier is still reported. Call it only while h's worker is
// asleep or gone.
func verifyWheel(h *HashedWheelTimer) error {
	if h.worker == nil {
		return nil
	}
	exact := true
	for i := range h.shards {
		if !h.shards[i].moved.Empty() {
			exact = false
		}
	}
	return h.worker.wheel.verify(exact)
}
