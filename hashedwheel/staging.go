package hashedwheel

// staging holds, oldest first, the new timeouts the worker has collected
// off the intake stacks beyond a tick's transfer budget, for the ticks
// that follow to move into the wheel before anything collected after them.
// Their state stays queued, so that cancelling one is still a single
// compare-and-swap, and the ticks drop those cancelled meanwhile. Only the
// worker touches it.
type staging struct {
	items []*timeout
	head  int // items[:head] have been popped and cleared
}

// maxKeptStaging bounds the capacity an empty staging keeps, so that a
// burst's worth of pointers is not held once the burst is in the wheel.
const maxKeptStaging = 1 << 14

func (s *staging) len() int { return len(s.items) - s.head }

// push appends t.
func (s *staging) push(t *timeout) {
	if len(s.items) == cap(s.items) && s.head >= len(s.items)/2 {
		// Reuse the popped half instead of growing: pushes and pops then
		// cost amortised O(1) and the slice stays within twice the content.
		n := copy(s.items, s.items[s.head:])
		clear(s.items[n:])
		s.items, s.head = s.items[:n], 0
	}
	s.items = append(s.items, t)
}

// pop moves up to len(buf) timeouts, oldest first, into buf and returns
// how many.
func (s *staging) pop(buf []*timeout) int {
	n := copy(buf, s.items[s.head:])
	clear(s.items[s.head : s.head+n])
	s.head += n
	if s.head == len(s.items) {
		s.reset()
	}
	return n
}

// drain calls f for every timeout, oldest first, and empties s.
func (s *staging) drain(f func(*timeout)) {
	for _, t := range s.items[s.head:] {
		f(t)
	}
	clear(s.items)
	s.reset()
}

func (s *staging) reset() {
	s.head = 0
	if cap(s.items) > maxKeptStaging {
		s.items = nil
		return
	}
	s.items = s.items[:0]
}
