package hashedwheel

// withShards sets the number of intake shards, a power of two, instead of
// one per few processors; tests use it so as not to depend on the machine.
func withShards(n int) Option {
	return func(cfg *config) error {
		cfg.shards = n
		return nil
	}
}

// registered returns the number of registrations waiting to be called.
func (x *contextExtras) registered() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.slots) - len(x.free)
}
