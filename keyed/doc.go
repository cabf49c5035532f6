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
// allocates nothing; a new key costs the timer's 64-byte timeout and, unless
// one is reused, a small entry.
//
// Each entry, a key with its value, ends once: its expiry function is
// called with the key and the value, or Remove returns the value. An expiry
// that races a Set, Move or Remove of the same key is decided by the
// entry's lock: whichever takes it first wins, and a Remove that returned
// the value always means the expiry function is not called for it. After
// the timer's Stop, keys never expire and stay in the set. See Timers for
// the whole contract.
package keyed
