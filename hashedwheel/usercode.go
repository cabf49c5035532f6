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
