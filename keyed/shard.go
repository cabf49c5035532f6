package keyed

import (
	"sync"
	"time"

	"golang.org/x/sys/cpu"
)

// shard is one lock and the map of the keys that hash to it. Every read
// and write of the map, and of its entries' value and timeout, holds mu.
type shard[K comparable, V any] struct {
	mu    sync.Mutex
	m     map[K]*entry[K, V]
	owner *Timers[K, V]
	_     cpu.CacheLinePad // shards used from different processors share no line
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

// unlink takes e, current, out of the set: its key leaves the map and no
// timeout is current for it any more. The caller holds s.mu.
func (s *shard[K, V]) unlink(e *entry[K, V]) {
	delete(s.m, e.key)
	e.timeout = nil
}
