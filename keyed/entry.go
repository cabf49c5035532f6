package keyed

import "github.com/wheeltimer/wheeltimer/hashedwheel"

// entry is a key in the set with its value, and the TimerTask of its
// timeouts, so that a new key costs one allocation besides the timer's, or
// none when its shard has an entry to reuse.
//
// timeout is the one timeout whose expiry may end the entry; nil once the
// entry has left the set. Set and Move replace it when the old one fired
// while they held the lock, and an entry reused for another key gets a new
// one, so an expiry whose timeout is no longer current does nothing.
type entry[K comparable, V any] struct {
	shard   *shard[K, V]
	key     K
	value   V
	timeout hashedwheel.Timeout
}

// Run is called by the timer when fired's deadline has passed: if fired is
// still the entry's timeout, the key leaves the set and the expiry function
// is called, outside the lock, with the key and the value.
func (e *entry[K, V]) Run(fired hashedwheel.Timeout) {
	s := e.shard
	s.mu.Lock()
	if e.timeout != fired {
		s.mu.Unlock()
		return // removed, or given a new timeout, after fired's deadline passed
	}
	key, value := e.key, e.value
	s.unlink(e)
	s.mu.Unlock()
	s.owner.expire(key, value)
}
