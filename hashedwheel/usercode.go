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

// userCodePanicked counts and logs the panic r of t's task or hook, with
// the task's name and the stack; it runs in the deferred call that
// recovered r, so the stack is the panicking goroutine's.
func (h *HashedWheelTimer) userCodePanicked(what userCode, t *timeout, r any) {
	if what == userHook {
		h.counters.hookPanics.Add(1)
	} else {
		h.counters.taskPanics.Add(1)
	}
	h.config.logger.Error("hashedwheel: "+what.String()+" panicked",
		"task", taskName(t.task), "panic", r, "stack", string(debug.Stack()))
}

// userCodeExited counts and logs a call of runtime.Goexit by t's task or
// hook.
func (h *HashedWheelTimer) userCodeExited(what userCode, t *timeout) {
	h.counters.goexits.Add(1)
	h.config.logger.Error("hashedwheel: "+what.String()+" called runtime.Goexit; its goroutine ended, the timer carries on",
		"task", taskName(t.task), "stack", string(debug.Stack()))
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

// afterUserCode, deferred after a task or hook of t that sets *returned
// as it returns, recovers a panic and counts and logs it with its stack,
// as net/http does for a handler, and counts and logs a call of
// runtime.Goexit, which cannot be stopped: the goroutine ends, and the
// dispatcher or the worker carries on with another. A user's task or hook
// never takes the timer down.
func (h *HashedWheelTimer) afterUserCode(what userCode, t *timeout, returned *bool) {
	if *returned {
		return
	}
	if r := recover(); r != nil {
		h.userCodePanicked(what, t, r)
		return
	}
	h.userCodeExited(what, t)
}

// runCancelledHook calls the task's Cancelled hook, if it has one,
// recovering and logging a panic.
func (h *HashedWheelTimer) runCancelledHook(t *timeout) {
	hook := cancelledHookOf(t.task)
	if hook == nil {
		return
	}
	returned := false
	defer h.afterUserCode(userHook, t, &returned)
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
