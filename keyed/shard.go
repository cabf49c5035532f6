package keyed

import (
	"sync"
	"time"

	"golang.org/x/sys/cpu"
)

// maxFree is the number of entries a shard keeps for reuse.
const maxFree = 64

// shrinkFloor is the number of keys below which a shard's map is never
// rebuilt: a map is rebuilt, smaller, once its keys fall below a quarter
// of the most it held since it was made, and that most is above
// shrinkFloor. Go maps do not shrink, so without it a wave of keys would
// leave its maps' memory behind; with it, a shard keeps a map of at most
// max(shrinkFloor, 4 × its keys) slots' worth, and each rebuild, which
// copies at most a quarter of the keys, follows at least three times as
// many deletes.
const shrinkFloor = 256

// shard is one lock and the map of the keys that hash to it. Every read
// and write of the map, of its entries and of free holds mu.
type shard[K comparable, V any] struct {
	mu    sync.Mutex
	m     map[K]*entry[K, V]
	peak  int // the most keys m has held since it was made
	owner *Timers[K, V]
	// free holds entries that have left the set, for Set to reuse, so that
	// a set whose keys come and go allocates only the timer's timeouts. An
	// entry is reused in its own shard only: an expiry whose timeout is no
	// longer current may still read its shard.
	free []*entry[K, V]
	_    cpu.CacheLinePad // shards used from different processors share no line
}

func (s *shard[K, V]) init(owner *Timers[K, V]) {
	s.m = make(map[K]*entry[K, V])
	s.owner = owner
}

// rearm gives e, current, a deadline delay from now: its timeout moves with
// Reset, or, if the timeout has fired (its expiry waits for s.mu) or was
// cancelled by Stop, a new timeout replaces it, which makes the old one's
// expiry find the entry not current. The caller holds s.mu.
func (s *shard[K, V]) rearm(e *entry[K, V], delay time.Duration) error {
	if e.timeout.Reset(delay) {
		return nil
	}
	timeout, err := s.owner.timer.NewTimeout(e, delay)
	if err != nil {
		return err
	}
	e.timeout = timeout
	return nil
}

// newEntry returns an entry of s for key and value, not yet in the map and
// with no timeout: one that left the set if s has one, else a new one. The
// caller holds s.mu.
func (s *shard[K, V]) newEntry(key K, value V) *entry[K, V] {
	n := len(s.free)
	if n == 0 {
		return &entry[K, V]{shard: s, key: key, value: value}
	}
	e := s.free[n-1]
	s.free[n-1] = nil
	s.free = s.free[:n-1]
	e.key, e.value = key, value
	return e
}

// release keeps e, which is not in the map and has no timeout, for reuse,
// holding neither its key nor its value. The caller holds s.mu.
func (s *shard[K, V]) release(e *entry[K, V]) {
	var (
		key   K
		value V
	)
	e.key, e.value = key, value
	if len(s.free) < maxFree {
		s.free = append(s.free, e)
	}
}

// link puts e, which has its timeout, in the map under its key. The
// caller holds s.mu.
func (s *shard[K, V]) link(e *entry[K, V]) {
	s.m[e.key] = e
	s.peak = max(s.peak, len(s.m))
}

// unlink takes e, current, out of the set: its key leaves the map, no
// timeout is current for it any more, and it is kept for reuse. The caller
// holds s.mu and has read what it needs of e.
func (s *shard[K, V]) unlink(e *entry[K, V]) {
	delete(s.m, e.key)
	e.timeout = nil
	s.release(e)
	if s.peak > shrinkFloor && len(s.m) < s.peak/4 {
		s.shrink()
	}
}

// empty takes every key out of the map, whose entries the caller has
// released: a map that grew past shrinkFloor is dropped for a new one. The
// caller holds s.mu.
func (s *shard[K, V]) empty() {
	if s.peak > shrinkFloor {
		s.m = make(map[K]*entry[K, V])
		s.peak = 0
		return
	}
	clear(s.m)
}

// shrink replaces the map by a copy sized for the keys it holds, so that
// the memory of the keys that left goes back to the heap. The caller holds
// s.mu.
func (s *shard[K, V]) shrink() {
	m := make(map[K]*entry[K, V], len(s.m))
	for key, e := range s.m {
		m[key] = e
	}
	s.m = m
	s.peak = len(m)
}
