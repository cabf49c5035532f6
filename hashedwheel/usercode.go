package hashedwheel

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
)

// The user code that failed, as userCodeFailed names it.
const (
	userTask = "TimerTask"
	userHook = "Cancelled hook"
)

// userCodeFailed counts and logs t's task or hook that panicked with r or,
// r nil, called runtime.Goexit, from the deferred call that recovered r.
func (h *HashedWheelTimer) userCodeFailed(what string, t *timeout, r any) {
	if r == nil {
		h.counters.goexits.Add(1)
		h.config.logger.Error("hashedwheel: "+what+" called runtime.Goexit; its goroutine ended, the timer carries on",
			"task", taskName(t.task), "stack", string(debug.Stack()))
		return
	}
	if what == userHook {
		h.counters.hookPanics.Add(1)
	} else {
		h.counters.taskPanics.Add(1)
	}
	h.config.logger.Error("hashedwheel: "+what+" panicked",
		"task", taskName(t.task), "panic", r, "stack", string(debug.Stack()))
}

// taskName names a task for a log line: its function's name, or the type
// of another TimerTask, never its fields, which may be racy or secret.
func taskName(task TimerTask) string {
	switch f := task.(type) {
	case plainFunc, TaskFunc:
		return funcName(f)
	case *scheduledTask:
		return funcName(f.f)
	}
	return fmt.Sprintf("%T", task)
}

// funcName returns the name of the function f, or else its type.
func funcName(f any) string {
	v := reflect.ValueOf(f)
	if v.Kind() == reflect.Func && !v.IsNil() {
		if fn := runtime.FuncForPC(v.Pointer()); fn != nil {
			return fn.Name()
		}
	}
	return fmt.Sprintf("%T", f)
}

// cancelledHookOf spares the commonest tasks, and the contexts a push finds
// cancelled on top, the dearer interface assertion.
func cancelledHookOf(task TimerTask) cancelledHook {
	switch task.(type) {
	case plainFunc, TaskFunc, *wheelContext:
		return nil
	}
	hook, _ := task.(cancelledHook)
	return hook
}

type panicError struct{ value any }

func (e panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

func (h *HashedWheelTimer) executorRefused(err error) {
	h.counters.executorFailures.Add(1)
	h.config.logger.Warn("hashedwheel: executor refused expired tasks; running them on a new goroutine",
		"error", err)
}
