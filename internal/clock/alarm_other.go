//go:build !linux

package clock

import "time"

// alarm is the Linux timerfd that backs up the runtime timer of a Sleeper
// (see alarm_linux.go). Elsewhere there is none and the runtime timer
// alone ends a sleep.
type alarm struct{}

func newAlarm() *alarm { return nil }

func (*alarm) set(time.Duration)      {}
func (*alarm) fired() <-chan struct{} { return nil }
func (*alarm) close()                 {}
