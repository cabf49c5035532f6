package dispatch_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/internal/dispatch"
)

// TestCalledFromTaskTellsTheDispatcher: a dispatcher's CalledFromTask is
// true inside its own tasks only: false inside a task of another
// dispatcher, and on the test's goroutine; a task of one dispatcher
// calling another's Dispatch on an executor that runs inline is a task of
// both.
func TestCalledFromTaskTellsTheDispatcher(t *testing.T) {
	type seen struct{ own, other, any bool }
	got := make(chan seen, 2)
	var a, b *dispatch.Dispatcher[int]
	a = dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 1, Run: func(int) {
		got <- seen{a.CalledFromTask(), b.CalledFromTask(), dispatch.CalledFromTask()}
	}})
	b = dispatch.New(dispatch.Config[int]{Executor: &goExecutor{}, Parallelism: 1, Run: func(int) {}})
	assert.False(t, a.CalledFromTask(), "on the test's goroutine")
	a.Dispatch(sequence(1))
	select {
	case s := <-got:
		assert.Equal(t, seen{own: true, other: false, any: true}, s, "inside a task of a")
	case <-time.After(waitBound):
		require.Fail(t, "the task never ran")
	}
	closeAndWaitIdle(t, a)
	closeAndWaitIdle(t, b)

	nested := make(chan [2]bool, 1)
	var outer, inner *dispatch.Dispatcher[int]
	inner = dispatch.New(dispatch.Config[int]{Executor: callerRuns{}, Parallelism: 1, Run: func(int) {
		nested <- [2]bool{outer.CalledFromTask(), inner.CalledFromTask()}
	}})
	outer = dispatch.New(dispatch.Config[int]{Executor: callerRuns{}, Parallelism: 1, Run: func(int) {
		inner.Dispatch(sequence(1))
	}})
	outer.Dispatch(sequence(1))
	assert.Equal(t, [2]bool{true, true}, <-nested, "a task of inner run inside a task of outer")
	closeAndWaitIdle(t, outer)
	closeAndWaitIdle(t, inner)
}

// callerRuns runs each function on the calling goroutine.
type callerRuns struct{}

func (callerRuns) Execute(f func()) error {
	f()
	return nil
}
