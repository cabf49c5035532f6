package clock

// SleepingUntil returns the Nanotime instant the clock's sleepers wait for,
// the earliest if several, or clockwork.Forever: where a timer on it
// wakes next.
func (f *Fake) SleepingUntil() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sleepingUntil()
}
