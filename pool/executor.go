// Package pool provides the executors a hashedwheel timer hands expired
// tasks to: Inline, which runs them on the timer's own goroutine, and the
// bounded goroutine pool that NewAnts makes, built on
// github.com/panjf2000/ants/v2.
package pool

// Executor runs tasks. It is the Go form of java.util.concurrent.Executor.
//
// Execute must not block: a timer calls it from its worker goroutine,
// which nothing but its own Cancelled hooks, Scheduler calls and Inline
// tasks may hold up. While the executor has no goroutine free, it queues
// the task, or returns an error. A nil error means the executor accepted
// the task and will run it exactly once; a non-nil error means it did not
// accept it and will never run it (the timer then runs it on a goroutine
// of its own). An executor states how many tasks it runs at once with a
// method Cap() int: a timer then never hands it more at a time (see
// hashedwheel.WithExecutor).
type Executor interface {
	Execute(task func()) error
}

// Inline runs each task on the goroutine that calls Execute, before Execute
// returns (Netty's ImmediateExecutor). With a timer, that is the timer's
// worker goroutine: a slow task delays every other timeout. It never fails.
var Inline Executor = inline{}

type inline struct{}

func (inline) Execute(task func()) error {
	task()
	return nil
}
