package otel

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel/metric"
)

// ErrNameTaken is returned by Register for a name under which a timer is
// already registered on the meter: the meter would sum the two timers'
// observations into one series.
var ErrNameTaken = errors.New("otel: a timer is registered under this name on this meter")

// names holds the names registered, by meter; mu guards it.
var (
	mu    sync.Mutex
	names = map[metric.Meter]map[string]bool{}
)

// reserve takes name on meter, failing with ErrNameTaken if a timer holds
// it, and returns the function that frees it. A meter of a type that
// cannot be a map key is not tracked: its names are not checked.
func reserve(meter metric.Meter, name string) (release func(), err error) {
	if !reflect.TypeOf(meter).Comparable() {
		return func() {}, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if names[meter][name] {
		return nil, fmt.Errorf("%w: Register(%q): Unregister the other first, or give this timer a name of its own", ErrNameTaken, name)
	}
	if names[meter] == nil {
		names[meter] = map[string]bool{}
	}
	names[meter][name] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			delete(names[meter], name)
			if len(names[meter]) == 0 {
				delete(names, meter)
			}
		})
	}, nil
}

// registration is the Registration of a timer's callback: its Unregister
// also frees the name.
type registration struct {
	metric.Registration
	release func()
}

// Unregister stops the timer's observations and, once the meter has
// unregistered the callback, frees its name for another Register.
func (r *registration) Unregister() error {
	if err := r.Registration.Unregister(); err != nil {
		return err
	}
	r.release()
	return nil
}
