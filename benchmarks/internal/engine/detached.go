package engine

// Detached returns a pending entry that belongs to no engine, for testing a
// Structure on its own, in virtual time. Only When, Link, Claim, IsExpired,
// IsCancelled and MarkCancelled may be used on it; Reset and Deadline need
// an engine.
func Detached[L any](when int64) *Entry[L] {
	return &Entry[L]{When: when}
}

// MarkCancelled switches a pending entry to cancelled without unlinking it.
// That is what Cancel does before it takes the engine's lock, so structure
// tests use it to reproduce the window in which Expire meets a cancelled
// entry still linked. It reports whether the entry was pending.
func (e *Entry[L]) MarkCancelled() bool {
	return e.state.CompareAndSwap(statePending, stateCancelled)
}
