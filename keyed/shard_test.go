package keyed

// shardFor returns the shard that holds key, a valid key, for tests that
// look inside a shard.
func (t *Timers[K, V]) shardFor(key K) *shard[K, V] {
	s, _ := t.shardOf(key)
	return s
}
