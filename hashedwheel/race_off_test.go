//go:build !race

package hashedwheel

// raceEnabled reports whether the race detector is on; real-time tests
// scale their load down by its cost (5–10× per operation).
const raceEnabled = false
