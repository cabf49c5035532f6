package hierarchical

import (
	"fmt"
	"math"
)

// wheels is the hierarchy of levels and their delay queue: the
// engine.Structure of a Timer. All times are nanoseconds after the timer's
// start. Two invariants keep every bucket's slot its own:
//
//   - A queued bucket of a level holds a range in that level's window,
//     [cur, cur + wheelSize·tick): within the window, distinct ranges have
//     distinct slots.
//   - A level's cur only moves forward, and only to an instant at or before
//     which no queued bucket is due (lower levels first on a tie), so that
//     no queued bucket ever falls behind its level's window.
type wheels struct {
	size   int64 // buckets per level
	levels []*level
	queue  delayQueue
}

// level is one wheel of the hierarchy.
type level struct {
	index   int
	tick    int64 // the range of one bucket: the span of the level below
	cur     int64 // start of the current bucket's range, a multiple of tick
	top     bool  // tick·size would overflow: the window is unbounded
	buckets []bucket
}

func newWheels(tick int64, size int) *wheels {
	w := &wheels{size: int64(size)}
	w.levels = []*level{w.newLevel(0, tick, 0)}
	return w
}

func (w *wheels) newLevel(index int, tick, cur int64) *level {
	lv := &level{
		index:   index,
		tick:    tick,
		cur:     cur - cur%tick,
		top:     tick > math.MaxInt64/w.size,
		buckets: make([]bucket, w.size),
	}
	for i := range lv.buckets {
		lv.buckets[i].level = lv
		lv.buckets[i].index = -1
	}
	return lv
}

// dueOf returns when the bucket holding range vid of lv must be handed to
// the worker. A level-0 bucket is due at the end of its range, once every
// deadline in it has passed: that is what makes the wheel never fire early.
// A higher bucket is due at the start of its range, when its entries must
// move down to finer levels to keep a one-tick precision.
func (lv *level) dueOf(vid int64) int64 {
	if lv.index == 0 {
		return (vid + 1) * lv.tick
	}
	return vid * lv.tick
}

// Insert links e into the lowest level whose window covers its deadline.
func (w *wheels) Insert(e *entry, now int64) {
	if w.Next() > now {
		// Nothing is overdue, so every level may jump to now. Without this
		// the clock would stand still while the timer idles, and a short
		// delay would land in a needlessly high level and cascade.
		w.advance(now)
	}
	w.place(e)
}

// place links e into the lowest level that covers its deadline, creating
// levels on demand. An overdue entry goes to level 0's current bucket,
// which expires at the end of the current tick.
func (w *wheels) place(e *entry) {
	for i := 0; ; i++ {
		if i == len(w.levels) {
			w.grow()
		}
		lv := w.levels[i]
		first := lv.cur / lv.tick
		vid := max(e.When/lv.tick, first)
		if !lv.top && vid-first >= w.size {
			continue // beyond this level's window
		}
		b := &lv.buckets[vid%w.size]
		switch {
		case b.index < 0:
			b.vid, b.due = vid, lv.dueOf(vid)
			w.queue.push(b)
		case b.vid != vid:
			panic(fmt.Sprintf("hierarchical: level %d slot %d holds range %d, wanted %d",
				lv.index, vid%w.size, b.vid, vid))
		}
		b.add(e)
		return
	}
}

// grow adds the level above the highest, whose tick is the highest's span.
func (w *wheels) grow() {
	top := w.levels[len(w.levels)-1]
	if top.top {
		panic("hierarchical: a deadline beyond the unbounded top level")
	}
	w.levels = append(w.levels, w.newLevel(len(w.levels), top.tick*w.size, top.cur))
}

// advance moves every level's clock forward to t, rounded down to the
// level's tick. The caller guarantees no queued bucket is due before t.
func (w *wheels) advance(t int64) {
	for _, lv := range w.levels {
		if c := t - t%lv.tick; c > lv.cur {
			lv.cur = c
		}
	}
}

// Expire hands every due bucket to the clock in order. A level-0 bucket's
// entries are claimed and appended to due, each checked against its own
// deadline; a higher bucket's entries are re-inserted lower down.
func (w *wheels) Expire(now int64, due []*entry) []*entry {
	for b := w.queue.peek(); b != nil && b.due <= now; b = w.queue.peek() {
		w.queue.pop()
		w.advance(b.due)
		for e := b.detach(); e != nil; {
			next := e.Link.next
			e.Link = link{}
			switch {
			case e.IsCancelled():
				// Its Cancel is waiting for the lock and will find it
				// unlinked.
			case b.level.index > 0 || e.When > now:
				// A cascade; or, never, an entry misplaced at level 0,
				// which is kept rather than fired early.
				w.place(e)
			case e.Claim():
				due = append(due, e)
			}
			e = next
		}
	}
	w.advance(now)
	return due
}

// Next returns when the first queued bucket is due, or math.MaxInt64.
func (w *wheels) Next() int64 {
	if b := w.queue.peek(); b != nil {
		return b.due
	}
	return math.MaxInt64
}

// Remove unlinks e from its bucket in O(1). An emptied bucket stays queued,
// as in Kafka: the worker pops it when due, at no cost to Remove.
func (w *wheels) Remove(e *entry) {
	if b := e.Link.bucket; b != nil {
		b.remove(e)
	}
}

// Move re-adds e at its new deadline, as Kafka's wheel does: it is unlinked
// from its bucket in O(1) and placed again, in the lowest level that covers
// the deadline. The bucket it leaves stays queued, as after Remove.
func (w *wheels) Move(e *entry, when, now int64) {
	w.Remove(e)
	e.When = when
	w.Insert(e, now)
}

// Clear unlinks every entry and calls f for each.
func (w *wheels) Clear(f func(*entry)) {
	for _, lv := range w.levels {
		for i := range lv.buckets {
			for e := lv.buckets[i].detach(); e != nil; {
				next := e.Link.next
				e.Link = link{}
				f(e)
				e = next
			}
		}
	}
	w.queue.clear()
}
