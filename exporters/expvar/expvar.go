// Package expvar publishes a timer's Stats as a variable of the standard
// library's expvar, served at /debug/vars, in Stats's JSON form:
// snake_case names, durations in seconds. For a timer, or any
// LatenessSource, the object also has the median, 99th percentile and
// longest of the two parts of its Lateness, hand_over and hand_off, as
// Stats has them for the total.
//
// It is a package of its own, not a function of hashedwheel, because
// importing expvar registers /debug/vars on http.DefaultServeMux and
// links net/http: a program gets that only if it asks for it. Beside the
// standard library's package, import it under another name, as
// wheelexpvar.
package expvar

import (
	"errors"
	"expvar"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// Source is what Publish reads: a *hashedwheel.HashedWheelTimer, or
// anything else with its Stats method.
type Source interface {
	Stats() hashedwheel.Stats
}

// LatenessSource is a Source that also has the Lateness method, as a
// *hashedwheel.HashedWheelTimer has. Its variable has, beside the fields
// of Stats, hand_over_p50_seconds, hand_over_p99_seconds,
// max_hand_over_seconds, hand_off_wait_p50_seconds and
// hand_off_wait_p99_seconds (Stats has max_hand_off_wait_seconds): the
// quantiles as Histogram.Quantile gives them, to within 19% above.
type LatenessSource interface {
	Source
	Lateness() hashedwheel.Lateness
}

// ErrNameTaken is returned by Publish for a name already published, by
// Publish or by other code with expvar.
var ErrNameTaken = errors.New("expvar: name already published")

// published holds the variables Publish made, by name, whether they serve
// a timer now or were unpublished; mu orders the publications.
var (
	mu        sync.Mutex
	published = map[string]*variable{}
)

// variable is the expvar variable of a name: it reads the source published
// under the name, or is null while none is.
type variable struct {
	source atomic.Pointer[Source] // nil once unpublished
}

// String returns the source's Stats as JSON, or null once unpublished;
// expvar calls it on each request of /debug/vars.
func (v *variable) String() string {
	src := v.source.Load()
	if src == nil {
		return "null"
	}
	b, err := (*src).Stats().MarshalJSON()
	if err != nil { // Stats holds only numbers: not reached
		return "null"
	}
	if l, ok := (*src).(LatenessSource); ok {
		b = appendLateness(b[:len(b)-1], l.Lateness())
		b = append(b, '}')
	}
	return string(b)
}

// appendLateness appends the fields of LatenessSource, each after a
// comma, to b.
func appendLateness(b []byte, l hashedwheel.Lateness) []byte {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"hand_over_p50_seconds", l.HandOver.Quantile(0.5)},
		{"hand_over_p99_seconds", l.HandOver.Quantile(0.99)},
		{"max_hand_over_seconds", l.HandOver.Max},
		{"hand_off_wait_p50_seconds", l.HandOff.Quantile(0.5)},
		{"hand_off_wait_p99_seconds", l.HandOff.Quantile(0.99)},
	} {
		b = append(strconv.AppendQuote(append(b, ','), f.name), ':')
		b = strconv.AppendFloat(b, f.d.Seconds(), 'g', -1, 64)
	}
	return b
}

// Publish publishes timer's Stats as the expvar variable name, read at
// each request of /debug/vars. A name serves one timer: Publish fails with
// an error wrapping ErrNameTaken for a name it already serves, as for a
// name that other code published with expvar, and leaves it as it was, so
// that two timers never report under one name. Unpublish frees a name for
// the next Publish. Publish never panics, as expvar.Publish does for a
// name used twice, and fails with an error for an empty name or a nil
// timer. It may be called from any goroutine.
func Publish(name string, timer Source) error {
	if name == "" {
		return errors.New("expvar: Publish with an empty name")
	}
	if v := reflect.ValueOf(timer); timer == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("expvar: Publish(%q) with a nil timer", name)
	}
	mu.Lock()
	defer mu.Unlock()
	if v, ok := published[name]; ok {
		if !v.source.CompareAndSwap(nil, &timer) {
			return fmt.Errorf("%w: %q serves another timer; Unpublish it first", ErrNameTaken, name)
		}
		return nil
	}
	if expvar.Get(name) != nil {
		return fmt.Errorf("%w: %q, by other code", ErrNameTaken, name)
	}
	v := &variable{}
	v.source.Store(&timer)
	if err := publish(name, v); err != nil {
		return err
	}
	published[name] = v
	return nil
}

// Unpublish stops name, published by Publish, from serving its timer, and
// reports whether it served one. expvar cannot remove a variable: the name
// stays at /debug/vars with the value null until Publish serves a timer
// under it again. The timer is no longer kept reachable.
func Unpublish(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	v, ok := published[name]
	return ok && v.source.Swap(nil) != nil
}

// publish calls expvar.Publish, turning its panic, for a name that other
// code published since Publish looked, into ErrNameTaken.
func publish(name string, v expvar.Var) (err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%w: %q, by other code", ErrNameTaken, name)
		}
	}()
	expvar.Publish(name, v)
	return nil
}
