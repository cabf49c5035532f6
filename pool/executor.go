// Package pool provides the executors a hashedwheel timer hands expired
// tasks to: Inline, which runs them on the timer's own goroutine, and Ants,
// a bounded goroutine pool built on github.com/panjf2000/ants/v2.
package pool

import "errors"

// Executor runs tasks. It is the Go form of java.util.concurrent.Executor.
//
// Execute must not block its caller for long: the timer calls it from its
// single worker goroutine. A nil error means the executor accepted the task
// and will run it exactly once; a non-nil error means it did not accept it
// and will never run it.
type Executor interface {
	Execute(task func()) error
}

// ErrClosed is returned by Execute on an executor that has been released.
var ErrClosed = errors.New("pool: executor closed")

// Inline runs each task on the goroutine that calls Execute, before Execute
// returns (Netty's ImmediateExecutor). With a timer, that is the timer's
// worker goroutine: a slow task delays every other timeout. It never fails.
var Inline Executor = inline{}

type inline struct{}

func (inline) Execute(task func()) error {
	task()
	return nil
}
