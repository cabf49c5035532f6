package clock

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// alarm is a one-shot timer the runtime notices sooner than its own when
// the garbage collector is marking. The runtime checks a processor's
// timers when that processor schedules; an idle processor that runs the
// collector's idle mark worker instead yields it for runnable goroutines
// and ready network descriptors only (runtime.pollWork), so a worker
// asleep on a runtime timer could wake several milliseconds late
// (golang/go#45632). An expiring timerfd is such a descriptor. In a storm
// of a million expiries the worker's wake-ups were late by up to 35ms
// with the runtime timer alone and seldom by more than a few with both.
//
// A goroutine reads the timerfd, parked in the network poller between
// expiries, and reports each on a channel.
type alarm struct {
	fd     int
	file   *os.File
	expiry chan struct{}
}

// newAlarm returns an alarm, or nil if the system refuses a timerfd.
func newAlarm() *alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	a := &alarm{fd: fd, file: os.NewFile(uintptr(fd), "hashedwheel-alarm"), expiry: make(chan struct{}, 1)}
	go a.listen()
	return a
}

// listen reports each expiry until the alarm is closed.
func (a *alarm) listen() {
	var count [8]byte // a timerfd read returns the expiries since the last
	for {
		if _, err := a.file.Read(count[:]); err != nil {
			return // closed
		}
		select {
		case a.expiry <- struct{}{}:
		default: // one report is enough
		}
	}
}

// set makes the alarm fire once, d from now, replacing any earlier
// setting and discarding a report of an earlier expiry not yet received.
// An expiry being reported while set runs may still arrive afterwards:
// Sleep allows an early return.
func (a *alarm) set(d time.Duration) {
	if a == nil {
		return
	}
	select {
	case <-a.expiry:
	default:
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	// Should it fail, the runtime timer still ends the sleep.
	_ = unix.TimerfdSettime(a.fd, 0, &spec, nil)
}

// fired returns the channel that receives a value when the alarm fires;
// nil, which never receives, for a nil alarm.
func (a *alarm) fired() <-chan struct{} {
	if a == nil {
		return nil
	}
	return a.expiry
}

// close releases the timerfd and ends the listening goroutine.
func (a *alarm) close() {
	if a != nil {
		a.file.Close()
	}
}
