package hashedwheel

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
)

// userCode says which of a timeout's user code panicked or called
// runtime.Goexit: its task or its Cancelled hook.
type userCode uint8

const (
	userTask userCode = iota
	userHook
)

func (c userCode) String() string {
	if c == userHook {
		return "Cancelled hook"
	}
	return "TimerTask"
}

// userCodeFailed counts and logs what t's task or hook did instead of
// returning: panic with r, or, with r nil, call runtime.Goexit, which
// ends its goroutine (the dispatcher or the worker carries on with
// another), with the task's name and the stack. It runs in the deferred
// call that recovered r, so the stack is the failing goroutine's. A user's
// task or hook never takes the timer down.
func (h *HashedWheelTimer) userCodeFailed(what userCode, t *timeout, r any) {
	if r == nil {
		h.counters.goexits.Add(1)
		h.config.logger.Error("hashedwheel: "+what.String()+" called runtime.Goexit; its goroutine ended, the timer carries on",
			"task", taskName(t.task), "stack", string(debug.Stack()))
		return
	}
	if what == userHook {
		h.counters.hookPanics.Add(1)
	} else {
		h.counters.taskPanics.Add(1)
	}
	h.config.logger.Error("hashedwheel: "+what.String()+" panicked",
		"task", taskName(t.task), "panic", r, "stack", string(debug.Stack()))
}

// taskName names a task for a log line: the function's name, as
// runtime.FuncForPC gives it, for the functions of AfterFunc, Every,
// ScheduleFunc and TaskFunc ("main.handle.func1" for a closure), and the
// type (%T) of any other TimerTask: never its fields, which its owner may
// be writing, and which may hold secrets.
func taskName(task TimerTask) string {
	switch f := task.(type) {
	case funcTask:
		return funcName(f)
	case TaskFunc:
		return funcName(f)
	case *everyTask:
		return funcName(f.f)
	case *scheduledTask:
		return funcName(f.f)
	}
	return fmt.Sprintf("%T", task)
}

// funcName returns the name of the function f, or its type if the runtime
// does not know it.
func funcName(f any) string {
	v := reflect.ValueOf(f)
	if v.Kind() == reflect.Func && !v.IsNil() {
		if fn := runtime.FuncForPC(v.Pointer()); fn != nil {
			return fn.Name()
		}
	}
	return fmt.Sprintf("%T", f)
}

// runCancelledHook calls the task's Cancelled hook, if it has one,
// recovering and logging a panic.
func (h *HashedWheelTimer) runCancelledHook(t *timeout) {
	hook := cancelledHookOf(t.task)
	if hook == nil {
		return
	}
	returned := false
	defer func() {
		if !returned {
			h.userCodeFailed(userHook, t, recover())
		}
	}()
	hook.Cancelled(t)
	returned = true
}

// cancelledHookOf returns the task's Cancelled hook, or nil. The function
// adapters, the commonest tasks, are recognised without the dearer
// interface assertion.
func cancelledHookOf(task TimerTask) cancelledHook {
	switch task.(type) {
	case funcTask, TaskFunc, *everyTask:
		return nil
	}
	hook, _ := task.(cancelledHook)
	return hook
}

// panicError is a recovered panic, as an error.
type panicError struct{ value any }

func (e panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// executorRefused counts and logs an executor's refusal of a drain
// function, which then runs on a goroutine of its own.
func (h *HashedWheelTimer) executorRefused(err error) {
	h.counters.executorFailures.Add(1)
	h.config.logger.Warn("hashedwheel: executor refused expired tasks; running them on a new goroutine",
		"error", err)
}
