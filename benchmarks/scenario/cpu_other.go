//go:build !unix

package scenario

import "time"

// cpuTime is unavailable without getrusage; CPU figures read as missing.
func cpuTime() (time.Duration, bool) { return 0, false }
