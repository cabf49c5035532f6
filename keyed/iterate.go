package keyed

import (
	"iter"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// All returns an iterator over the keys in the set and their values, for
// range-over-func: for key, value := range set.All(). It takes the keys
// of one shard at a time, copied under the shard's lock and yielded
// outside it, so the loop's body may call any method of the set; under
// concurrent changes each shard's keys are those of its own instant, and
// a key set or removed during the loop may or may not be seen. A key is
// yielded at most once per loop. All works after the timer's Stop too,
// when the keys that stay never expire.
func (t *Timers[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		var batch []pair[K, V]
		for i := range t.shards {
			s := &t.shards[i]
			s.mu.Lock()
			batch = batch[:0]
			for key, e := range s.m {
				batch = append(batch, pair[K, V]{key, e.value})
			}
			s.mu.Unlock()
			for _, p := range batch {
				if !yield(p.key, p.value) {
					return
				}
			}
		}
	}
}

// pair is a key with its value.
type pair[K comparable, V any] struct {
	key   K
	value V
}

// Drain takes every key out of the set, as Remove does, and calls f, if
// not nil, with each key and its value; it returns the number of keys it
// took. The expiry function is not called for them. Drain takes one shard
// at a time, empties it under its lock and calls f outside it, so f may
// call any method of the set; a key set during the Drain may be left in
// the set. On a stopped timer it hands over every key that stayed: the
// end of a program's shutdown.
func (t *Timers[K, V]) Drain(f func(key K, value V)) int {
	var (
		batch    []pair[K, V]
		timeouts []hashedwheel.Timeout
		n        int
	)
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		batch, timeouts = batch[:0], timeouts[:0]
		for key, e := range s.m {
			batch = append(batch, pair[K, V]{key, e.value})
			timeouts = append(timeouts, e.timeout)
			e.timeout = nil
			s.release(e)
		}
		s.empty()
		s.mu.Unlock()
		// Outside the lock, as in Remove: the entries are no longer
		// current, so an expiry Cancel is too late to stop does nothing.
		for _, timeout := range timeouts {
			timeout.Cancel()
		}
		clear(timeouts)
		n += len(batch)
		if f != nil {
			for _, p := range batch {
				f(p.key, p.value)
			}
		}
		clear(batch)
	}
	return n
}

// Entry returns the key and the value of the entry whose timeout is
// timeout, and true, if that timeout is the current one of a key in this
// set: for each timeout of the set that the timer's Stop handed back, the
// key that stayed in the set and its value. It returns false for a
// timeout of another task or another set, and for one whose key has since
// expired, been removed, or been given a new timeout.
//
// Entry only looks: the key stays in the set, where All, Drain and Remove
// still find it. A shutdown that hands each key over once takes the set's
// keys with Drain alone, or with Remove for each key Entry names, and uses
// Entry to tell the set's timeouts from the others Stop returns.
func (t *Timers[K, V]) Entry(timeout hashedwheel.Timeout) (key K, value V, ok bool) {
	if timeout == nil {
		return key, value, false
	}
	e, isEntry := timeout.Task().(*entry[K, V])
	if !isEntry || e.shard.owner != t {
		return key, value, false
	}
	s := e.shard
	s.mu.Lock()
	if e.timeout == timeout {
		key, value, ok = e.key, e.value, true
	}
	s.mu.Unlock()
	return key, value, ok
}
