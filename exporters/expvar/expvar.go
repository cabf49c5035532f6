// Package expvar publishes a timer's Stats as a variable of the standard
// library's expvar, served at /debug/vars, in Stats's JSON form:
// snake_case names, the tick lag in seconds.
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
	"sync"
	"sync/atomic"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// Source is what Publish reads: a *hashedwheel.HashedWheelTimer, or
// anything else with its Stats method.
type Source interface {
	Stats() hashedwheel.Stats
}

// ErrNameTaken is returned by Publish for a name that other code has
// published with expvar.
var ErrNameTaken = errors.New("expvar: name published by other code")

// published holds the variables Publish made, by name; mu orders the
// publications, so that two Publish calls of a new name make one variable.
var (
	mu        sync.Mutex
	published = map[string]*variable{}
)

// variable is the expvar variable of a name: it reads whichever source
// was published under the name last.
type variable struct {
	source atomic.Pointer[Source]
}

// String returns the source's Stats as JSON; expvar calls it on each
// request of /debug/vars.
func (v *variable) String() string {
	b, err := (*v.source.Load()).Stats().MarshalJSON()
	if err != nil { // Stats holds only numbers: not reached
		return "null"
	}
	return string(b)
}

// Publish publishes timer's Stats as the expvar variable name, read at
// each request of /debug/vars. expvar cannot remove a variable, so a
// name published by Publish before is taken over: the variable reads the
// new timer from then on, and the old one is no longer kept reachable.
// Publish never panics, as expvar.Publish does for a name used twice: it
// fails with an error wrapping ErrNameTaken for a name that other code
// published, and with an error for an empty name or a nil timer. It may
// be called from any goroutine.
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
		v.source.Store(&timer)
		return nil
	}
	if expvar.Get(name) != nil {
		return fmt.Errorf("%w: %q", ErrNameTaken, name)
	}
	v := &variable{}
	v.source.Store(&timer)
	if err := publish(name, v); err != nil {
		return err
	}
	published[name] = v
	return nil
}

// publish calls expvar.Publish, turning its panic, for a name that other
// code published since Publish looked, into ErrNameTaken.
func publish(name string, v expvar.Var) (err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%w: %q", ErrNameTaken, name)
		}
	}()
	expvar.Publish(name, v)
	return nil
}
