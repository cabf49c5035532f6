package keyed

import (
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
	"runtime"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// ErrNilTimer is returned by New for a nil timer.
var ErrNilTimer = errors.New("keyed: nil timer")

// ErrInvalidKey is returned by Set for a key that is not equal to itself,
// a float NaN or an array, struct or interface value holding one, and for
// a key that cannot be compared at all, an interface holding a slice, map
// or func. A map never finds the first again, so the set could neither
// move, remove nor count it right; the second would panic in a map.
var ErrInvalidKey = errors.New("keyed: invalid key: not equal to itself (a NaN) or not comparable")

// ErrNotFound is returned by Reschedule for a key that is not in the set.
var ErrNotFound = errors.New("keyed: key not in the set")

// Timers is a set of keys, each with a value and a deadline on a hashedwheel
// timer. When a key's deadline passes, the key leaves the set and the
// expiry function given to New is called with the key and its value.
// Make one with New; all its methods are safe for concurrent use.
//
// An entry is a key with its value, from the Set that adds the key to the
// set until the key leaves it. A Set of a key already in the set replaces
// the entry's value and deadline; Move changes its deadline. Unless the
// timer is stopped first, the entry ends once, in one of two ways: its
// deadline passes and the expiry function is called with its key and its
// last value, or Remove returns that value. Both the expiry and Remove take the entry's lock, and the
// first to take it decides: a Remove that returned the value means the
// expiry function is not called for the entry, even when its deadline had
// already passed and the expiry was waiting for the lock; a Set or Move
// that took the lock first holds, and the expiry of the old deadline is
// dropped.
//
// The expiry function runs on the timer's executor, never before the
// entry's deadline, without any lock of the set held: it may call any
// method of the set, on any key. When it runs, its key has already left
// the set: Pending and Get report the key absent, Move and Remove return
// false, and a Set of the key makes a new entry, which expires on its own.
// Calls for different keys run concurrently, as the timer's executor runs
// tasks; so may two calls for the same key, for two entries, when the key
// was set again while the first call ran.
//
// The set takes its timeouts from the timer: each key in the set is a
// pending timeout of the timer, counted against WithMaxPendingTimeouts.
// When the timer refuses one, with ErrTooManyPendingTimeouts or ErrStopped,
// Set returns the error, wrapped, and leaves the set as it was.
//
// After the timer's Stop, the keys in the set stay there and never expire:
// Len counts them, Pending, Get and Remove find them, All lists them and
// Drain takes them all out, so that a program shutting down can still take
// every value; Entry gives the key and value of each timeout the timer's
// Stop handed back, leaving the key in the set. Set then fails with an error wrapping
// hashedwheel.ErrStopped and changes nothing; Move returns false, and
// Reschedule an error wrapping hashedwheel.ErrStopped for a key in the set
// and ErrNotFound for one that is not.
//
// A key that is not equal to itself, a NaN, is refused by Set with
// ErrInvalidKey. The set's memory follows its keys: once a shard holds
// fewer than a quarter of the most keys it held, and that most was above
// 256, its map is rebuilt for the keys it holds. A wave of keys that
// expired or were removed thus leaves behind, per shard, a map of at most
// 2 × 256 slots and 64 entries kept for reuse; there are 4 shards per
// GOMAXPROCS when New is called, rounded up to a power of two, at least
// 16. Each rebuild copies at most a quarter of the keys, after at least
// three times as many left.
type Timers[K comparable, V any] struct {
	timer  hashedwheel.Timer
	expire func(key K, value V)
	seed   maphash.Seed
	shards []shard[K, V]
	mask   uint64 // len(shards) - 1; the count is a power of two
	// strict is true when every value of K compares without panicking: K
	// holds no interface, whose dynamic value may be a slice or a map.
	strict bool
}

// New returns an empty set whose keys expire on timer, each with a call
// of expire. It fails with ErrNilTimer for a nil timer and with an error
// wrapping hashedwheel.ErrNilTask for a nil expire.
//
// The set takes any hashedwheel.Timer, a *hashedwheel.HashedWheelTimer or
// a hashedwheel.Interface included. Its expiry functions run on that
// timer's executor.
func New[K comparable, V any](timer hashedwheel.Timer, expire func(key K, value V)) (*Timers[K, V], error) {
	if isNil(timer) {
		return nil, ErrNilTimer
	}
	if expire == nil {
		return nil, fmt.Errorf("keyed: nil expiry function: %w", hashedwheel.ErrNilTask)
	}
	n := shardCount(runtime.GOMAXPROCS(0))
	t := &Timers[K, V]{
		timer:  timer,
		expire: expire,
		seed:   maphash.MakeSeed(),
		shards: make([]shard[K, V], n),
		mask:   uint64(n - 1),
		strict: strictlyComparable(reflect.TypeFor[K]()),
	}
	for i := range t.shards {
		t.shards[i].init(t)
	}
	return t, nil
}

// shardCount returns the number of shards for procs processors: four per
// processor, at least 16, rounded up to a power of two, so that goroutines
// on every processor seldom meet on one lock.
func shardCount(procs int) int {
	n := 16
	for n < 4*procs && n < 1<<16 {
		n <<= 1
	}
	return n
}

// isNil reports whether timer is nil or an interface holding a nil pointer.
func isNil(timer hashedwheel.Timer) bool {
	if timer == nil {
		return true
	}
	v := reflect.ValueOf(timer)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// shardOf returns the shard that holds key, and false for a key no map
// can hold (ErrInvalidKey): one not equal to itself, or, for a K holding
// an interface, one that cannot be compared, whose hash would panic.
func (t *Timers[K, V]) shardOf(key K) (*shard[K, V], bool) {
	if !t.strict {
		return t.shardOfAny(key)
	}
	if key != key { // a NaN, alone or inside the key
		return nil, false
	}
	return &t.shards[maphash.Comparable(t.seed, key)&t.mask], true
}

// shardOfAny is shardOf for a K holding an interface: comparing or
// hashing a key whose dynamic value is a slice, map or func panics, which
// it recovers.
func (t *Timers[K, V]) shardOfAny(key K) (s *shard[K, V], ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = nil, false
		}
	}()
	if key != key {
		return nil, false
	}
	return &t.shards[maphash.Comparable(t.seed, key)&t.mask], true
}

// strictlyComparable reports whether every value of type t compares
// without panicking: no interface anywhere in it.
func strictlyComparable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return false
	case reflect.Array:
		return strictlyComparable(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !strictlyComparable(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// Set gives key the value and a deadline delay from now, as the timer
// counts it: a zero or negative delay expires the key at the timer's next
// tick. A key already in the set keeps its entry, with value and the new
// deadline; its timeout is moved, which allocates nothing, as in Move. A
// new key costs the timer's timeout, and an entry unless one that left the
// set recently is reused.
//
// Set fails, wrapping the timer's ErrTooManyPendingTimeouts or ErrStopped,
// when the timer refuses a timeout; the set is then as it was: a new key
// is not added, a key already there keeps its value and deadline. It fails
// with ErrInvalidKey, and adds nothing, for a key not equal to itself or
// not comparable.
func (t *Timers[K, V]) Set(key K, value V, delay time.Duration) error {
	s, ok := t.shardOf(key)
	if !ok {
		return fmt.Errorf("keyed: set: %w", ErrInvalidKey)
	}
	s.mu.Lock()
	if e, ok := s.m[key]; ok {
		if err := s.rearm(e, delay); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("keyed: set: %w", err)
		}
		e.value = value
		s.mu.Unlock()
		return nil
	}
	e := s.newEntry(key, value)
	timeout, err := t.timer.NewTimeout(e, delay)
	if err != nil {
		s.release(e)
		s.mu.Unlock()
		return fmt.Errorf("keyed: set: %w", err)
	}
	// Under the lock: the expiry of timeout, however soon it fires, waits
	// for it and then finds the entry current.
	e.timeout = timeout
	s.link(e)
	s.mu.Unlock()
	return nil
}

// Move gives key a new deadline delay from now and returns its value and
// true; the key then expires no earlier than the new deadline. Moving a
// deadline allocates nothing: later, ever; earlier, while the timer's
// worker takes the reports of deadlines moved earlier as they come, as it
// does at each tick and every 4096 reports of a shard of the timer (a
// backlog beyond 4096 between two of its passes costs a 1 KiB chunk per
// 128, as the timer's Timeout.Reset does). Move returns the zero
// value and false, and changes nothing, when the key is not in the set or
// the timer is stopped; and when the key's deadline has just passed and
// the timer, at the limit of WithMaxPendingTimeouts, refuses the new
// timeout Move then needs: the key then expires. Reschedule does the same
// and says which of these it met.
func (t *Timers[K, V]) Move(key K, delay time.Duration) (V, bool) {
	value, err := t.Reschedule(key, delay)
	return value, err == nil
}

// Reschedule is Move with an error that says why the deadline did not
// move: ErrNotFound when the key is not in the set, on a running timer or
// a stopped one; an error wrapping hashedwheel.ErrStopped when the key is
// in the set and the timer is stopped, so the key stays and never
// expires; an error wrapping hashedwheel.ErrTooManyPendingTimeouts when
// the key's deadline had just passed and the timer refused the new
// timeout, so the key expires. On error the value is the zero value. On
// success it returns the key's value and nil, as Move returns it and true.
func (t *Timers[K, V]) Reschedule(key K, delay time.Duration) (V, error) {
	var zero V
	s, ok := t.shardOf(key)
	if !ok {
		return zero, ErrNotFound // an invalid key is never in the set
	}
	s.mu.Lock()
	e, ok := s.m[key]
	if !ok {
		s.mu.Unlock()
		return zero, ErrNotFound
	}
	if err := s.rearm(e, delay); err != nil {
		s.mu.Unlock()
		return zero, fmt.Errorf("keyed: move: %w", err)
	}
	value := e.value
	s.mu.Unlock()
	return value, nil
}

// Remove takes key out of the set and returns its value and true: the
// expiry function is not called for that entry. It returns the zero value
// and false when the key is not in the set.
func (t *Timers[K, V]) Remove(key K) (V, bool) {
	var zero V
	s, ok := t.shardOf(key)
	if !ok {
		return zero, false
	}
	s.mu.Lock()
	e, ok := s.m[key]
	if !ok {
		s.mu.Unlock()
		return zero, false
	}
	timeout, value := e.timeout, e.value
	s.unlink(e)
	s.mu.Unlock()
	// Outside the lock: the entry is no longer current, so an expiry that
	// Cancel is too late to stop finds nothing to do.
	timeout.Cancel()
	return value, true
}

// Get returns key's value and true, or the zero value and false when the
// key is not in the set. It leaves the deadline where it is.
func (t *Timers[K, V]) Get(key K) (V, bool) {
	var value V
	s, ok := t.shardOf(key)
	if !ok {
		return value, false
	}
	s.mu.Lock()
	e, ok := s.m[key]
	if ok {
		value = e.value
	}
	s.mu.Unlock()
	return value, ok
}

// Pending reports whether key is in the set: set, and neither expired nor
// removed since.
func (t *Timers[K, V]) Pending(key K) bool {
	s, ok := t.shardOf(key)
	if !ok {
		return false
	}
	s.mu.Lock()
	_, ok = s.m[key]
	s.mu.Unlock()
	return ok
}

// Len returns the number of keys in the set. It takes the lock of each
// shard in turn, so under concurrent changes the count holds for each
// shard at its own instant; with none, it is exact.
func (t *Timers[K, V]) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
