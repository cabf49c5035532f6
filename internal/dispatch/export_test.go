package dispatch

// InFlight returns the number of dispatched tasks that have not returned.
func (d *Dispatcher[T]) InFlight() int64 { return d.inflight.Load() }

// Outstanding returns the number of drain functions handed over and not
// returned.
func (d *Dispatcher[T]) Outstanding() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.outstanding
}

// Inline reports whether tasks run on the dispatching goroutine.
func (d *Dispatcher[T]) Inline() bool { return d.cfg.Executor == nil }

// MaxSpares is the number of emptied task slices a dispatcher keeps.
const MaxSpares = maxSpares

// Spares returns the number of emptied task slices the dispatcher keeps.
func (d *Dispatcher[T]) Spares() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.spares)
}
