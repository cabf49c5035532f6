package hashedwheel

import (
	"testing"
	"time"
)

func TestFakeClockFiresOnFirstTickAfterDeadline(t *testing.T) {
	h, fake := newFakeTimer(t)
	fired := 0
	to, err := h.NewTimeout(TaskFunc(func(Timeout) { fired++ }), 25*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	fake.Settle()
	advance(fake, 20*time.Millisecond)
	if fired != 0 {
		t.Fatalf("fired at 20ms, deadline 25ms")
	}
	advance(fake, 10*time.Millisecond)
	if fired != 1 || !to.IsExpired() {
		t.Fatalf("fired=%d expired=%v at 30ms", fired, to.IsExpired())
	}
}
