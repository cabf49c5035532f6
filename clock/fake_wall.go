package clock

import "time"

// StepWall steps the fake wall clock by d, forward or back, as an NTP step
// or a resumed virtual machine steps a real one: Now moves by d, Nanotime
// does not, and no sleeper wakes, since sleepers wait on Nanotime. A test
// of code that reads the wall clock, such as a schedule that runs at named
// times of day, calls it between Advance calls.
func (f *Fake) StepWall(d time.Duration) {
	f.mu.Lock()
	f.start = f.start.Add(d)
	f.mu.Unlock()
}
