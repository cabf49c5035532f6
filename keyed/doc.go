// Package keyed keeps one deadline per key on a hashedwheel timer: the
// session, connection or cache entry that expires unless it is touched in
// time, found by its key. It is go-zero's TimingWheel SetTimer, MoveTimer
// and RemoveTimer, and tokio's DelayQueue keys, on a timer that never fires
// early and never blocks the caller.
//
//	sessions, err := keyed.New(timer, func(id string, s *Session) { s.Close() })
//	...
//	err = sessions.Set(id, s, 30*time.Minute) // add, or replace the value and the deadline
//	s, ok := sessions.Move(id, 30*time.Minute) // push the deadline back, as a read does
//	s, ok = sessions.Remove(id)                // logged out: the expiry never runs
//
// A Timers is a map of keys to values, each with a timeout of the timer,
// split into shards with a lock each, so that goroutines working on
// different keys seldom wait for each other. Moving a deadline, or setting a
// key that is already there, moves its timeout with Timeout.Reset and
// allocates nothing, earlier or later (see Timers.Move for the one bound);
// a new key costs the timer's 64-byte timeout and, unless one is reused, a
// small entry. Once a wave of keys has left, the shards' maps are rebuilt
// smaller, so the set's memory follows the keys it holds.
//
// Each entry, a key with its value, ends once: its expiry function is
// called with the key and the value, or Remove returns the value. An expiry
// that races a Set, Move or Remove of the same key is decided by the
// entry's lock: whichever takes it first wins, and a Remove that returned
// the value always means the expiry function is not called for it. After
// the timer's Stop, keys never expire and stay in the set, where All lists
// them and Drain takes them out for a clean shutdown:
//
//	timer.Stop()
//	sessions.Drain(func(id string, s *Session) { s.Save() })
//
// Reschedule is Move with an error that tells a key not in the set
// (ErrNotFound) from a stopped timer (hashedwheel.ErrStopped), and Entry
// gives the key and value of each timeout the timer's Stop hands back,
// leaving the key in the set, where Drain still takes it. Set
// refuses a key not equal to itself (a NaN) or not comparable (a slice in
// an interface) with ErrInvalidKey. See Timers for the whole contract.
package keyed
