package contender

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zeromicro/go-zero/core/collection"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/keyed"
)

// Item is the value each key holds in the keyed scenario: a pointer, as a
// session or a connection would be.
type Item struct{ ID uint64 }

// KeyedSet is what the keyed scenario drives: one deadline per key, found
// by the key, the job of go-zero's SetTimer, MoveTimer and RemoveTimer. Its
// methods are safe for concurrent use.
type KeyedSet interface {
	// Set gives key the value and a deadline delay from now, replacing
	// what the key had.
	Set(key uint64, value *Item, delay time.Duration) error
	// Move gives key a new deadline delay from now; false when the set
	// could tell the key was not there.
	Move(key uint64, delay time.Duration) bool
	// Remove takes key out; false when the set could tell it was not
	// there.
	Remove(key uint64) bool
	// Close stops the set's timer and releases what it owns.
	Close()
}

// Keyed is one keyed set under comparison.
type Keyed struct {
	// Name identifies it in tables and in the -only flag.
	Name string
	// Note is a one-line description for the report.
	Note string
	// New returns a running, empty set of the given shape that calls
	// expire when a key's deadline passes.
	New func(cfg Config, expire func(key uint64, value *Item)) (KeyedSet, error)
}

// KeyedBaseline is the keyed set every keyed figure is compared with: what
// users write by hand.
const KeyedBaseline = "map+AfterFunc"

// AllKeyed returns every keyed set, the baseline first.
func AllKeyed() []Keyed {
	return []Keyed{handMapKeyed(), wheelKeyed(), goZeroKeyed()}
}

// SelectKeyed returns the keyed sets named in the comma-separated list, in
// AllKeyed's order, with the baseline; names of no keyed set (the plain
// contenders of Select) are ignored, so that one -only list serves both.
// An empty list selects all.
func SelectKeyed(list string) []Keyed {
	if strings.TrimSpace(list) == "" {
		return AllKeyed()
	}
	want := map[string]bool{KeyedBaseline: true}
	for _, name := range strings.Split(list, ",") {
		want[strings.TrimSpace(name)] = true
	}
	var out []Keyed
	for _, k := range AllKeyed() {
		if want[k.Name] {
			out = append(out, k)
		}
	}
	return out
}

// handMap is what users write by hand: a mutex-guarded map of the keys'
// runtime timers, time.AfterFunc to set, Reset to move, Stop to remove. The
// expiry checks that its timer is still the key's, so that a key set again
// is not taken out by the old timer.
type handMap struct {
	mu     sync.Mutex
	m      map[uint64]*time.Timer
	expire func(uint64, *Item)
}

func handMapKeyed() Keyed {
	return Keyed{
		Name: KeyedBaseline,
		Note: "by hand: sync.Mutex + map[uint64]*time.Timer; time.AfterFunc with a closure per key, Reset, Stop",
		New: func(_ Config, expire func(uint64, *Item)) (KeyedSet, error) {
			return &handMap{m: map[uint64]*time.Timer{}, expire: expire}, nil
		},
	}
}

func (h *handMap) Set(key uint64, value *Item, delay time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.m[key]; ok {
		old.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		h.mu.Lock()
		if h.m[key] != t {
			h.mu.Unlock()
			return
		}
		delete(h.m, key)
		h.mu.Unlock()
		h.expire(key, value)
	})
	h.m[key] = t
	return nil
}

func (h *handMap) Move(key uint64, delay time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.m[key]
	if ok {
		t.Reset(delay)
	}
	return ok
}

func (h *handMap) Remove(key uint64) bool {
	h.mu.Lock()
	t, ok := h.m[key]
	delete(h.m, key)
	h.mu.Unlock()
	if ok {
		t.Stop()
	}
	return ok
}

// Close stops every timer still in the map, which the runtime would
// otherwise keep until it fires.
func (h *handMap) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, t := range h.m {
		t.Stop()
		delete(h.m, k)
	}
}

// wheelSet is this library's keyed.Timers on a hashedwheel timer.
type wheelSet struct {
	timer *hashedwheel.HashedWheelTimer
	set   *keyed.Timers[uint64, *Item]
}

func wheelKeyed() Keyed {
	return Keyed{
		Name: "keyed",
		Note: "this library: keyed.Timers on hashedwheel, its own ants pool; sharded map, Timeout.Reset to move",
		New: func(cfg Config, expire func(uint64, *Item)) (KeyedSet, error) {
			h, err := hashedwheel.New(
				hashedwheel.WithTickDuration(cfg.Tick),
				hashedwheel.WithTicksPerWheel(cfg.WheelSize),
				hashedwheel.WithLogger(Logger()),
			)
			if err != nil {
				return nil, err
			}
			set, err := keyed.New(h, expire)
			if err != nil {
				h.Stop()
				return nil, err
			}
			return &wheelSet{timer: h, set: set}, nil
		},
	}
}

func (w *wheelSet) Set(key uint64, value *Item, delay time.Duration) error {
	return w.set.Set(key, value, delay)
}

func (w *wheelSet) Move(key uint64, delay time.Duration) bool {
	_, ok := w.set.Move(key, delay)
	return ok
}

func (w *wheelSet) Remove(key uint64) bool {
	_, ok := w.set.Remove(key)
	return ok
}

func (w *wheelSet) Close() { w.timer.Stop() }

// goZeroSet is go-zero's collection.TimingWheel, keyed by design. Its keys
// are of type any: a uint64 key is boxed, one allocation per call.
type goZeroSet struct{ tw *collection.TimingWheel }

func goZeroKeyed() Keyed {
	return Keyed{
		Name: "go-zero",
		Note: "go-zero core/collection.TimingWheel v1.10.3: SetTimer, MoveTimer, RemoveTimer, each a rendezvous " +
			"with its goroutine; keys and values are of type any (a uint64 key is boxed: one allocation per call)",
		New: func(cfg Config, expire func(uint64, *Item)) (KeyedSet, error) {
			tw, err := collection.NewTimingWheel(cfg.Tick, cfg.WheelSize, func(key, value any) {
				expire(key.(uint64), value.(*Item))
			})
			if err != nil {
				return nil, fmt.Errorf("go-zero: %w", err)
			}
			return goZeroSet{tw}, nil
		},
	}
}

// Set rounds a delay of zero or less up to one nanosecond, which go-zero
// rounds up to a tick; it refuses such delays.
func (g goZeroSet) Set(key uint64, value *Item, delay time.Duration) error {
	return g.tw.SetTimer(key, value, max(delay, 1))
}

// Move reports whether go-zero took the move: it cannot tell whether the
// key was there.
func (g goZeroSet) Move(key uint64, delay time.Duration) bool {
	return g.tw.MoveTimer(key, max(delay, 1)) == nil
}

// Remove reports whether go-zero took the removal, likewise.
func (g goZeroSet) Remove(key uint64) bool { return g.tw.RemoveTimer(key) == nil }

func (g goZeroSet) Close() { g.tw.Stop() }
