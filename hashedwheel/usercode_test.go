package hashedwheel

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/clock"
	"github.com/wheeltimer/wheeltimer/pool"
)

// recordHandler is a slog.Handler that keeps the records it is given.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// loggedTasks returns, for each record whose message is msg, its "task"
// attribute, in the order logged.
func (h *recordHandler) loggedTasks(msg string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var tasks []string
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		task := "<none>"
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "task" {
				task = a.Value.String()
			}
			return true
		})
		tasks = append(tasks, task)
	}
	return tasks
}

// panickingFunc is a named task function: its name is what the log line
// must give.
func panickingFunc() { panic("task exploded") }

// panicSignal's run, a method value, closes ran once, then panics.
type panicSignal struct {
	ran  chan struct{}
	once sync.Once
}

func (p *panicSignal) run() {
	p.once.Do(func() { close(p.ran) })
	panic("periodic task exploded")
}

// exitingTaskFunc is a named TaskFunc that calls runtime.Goexit.
func exitingTaskFunc(Timeout) { runtime.Goexit() }

// TestStatsCountTaskAndHookPanicsAndGoexits: each panic of a task or a
// Cancelled hook, and each call of runtime.Goexit by either, run inline on
// the worker or on the timer's pool, is counted in Stats and logged with
// the task's name: the function's for AfterFunc, Every, ScheduleFunc and
// TaskFunc, the type for any other TimerTask.
func TestStatsCountTaskAndHookPanicsAndGoexits(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			records := &recordHandler{}
			opts := []Option{WithLogger(slog.New(records))}
			if inline {
				opts = append(opts, WithExecutor(pool.Inline))
			}
			fake := clock.NewFake(time.Now())
			h := newTimerOn(t, fake, opts...)

			_, err := h.AfterFunc(testTick/2, panickingFunc)
			require.NoError(t, err)
			mustSchedule(t, h, TaskFunc(exitingTaskFunc), testTick/2)
			mustSchedule(t, h, &hookTask{onRun: func(Timeout) { panic("struct task exploded") }}, testTick/2)
			periodic := &panicSignal{ran: make(chan struct{})}
			every, err := h.Every(testTick, periodic.run)
			require.NoError(t, err)
			hookPanics := mustSchedule(t, h, &hookTask{onCancel: func(Timeout) { panic("hook exploded") }}, time.Hour)
			hookExits := mustSchedule(t, h, &hookTask{onCancel: func(Timeout) { runtime.Goexit() }}, time.Hour)

			// Every's first run is due at the end of the first tick; once
			// it has started, the Cancel below leaves it to run.
			advance(fake, testTick)
			select {
			case <-periodic.ran:
			case <-time.After(10 * time.Second):
				t.Fatal("Every's first run did not start")
			}
			require.True(t, every.Cancel())
			require.True(t, hookPanics.Cancel())
			require.True(t, hookExits.Cancel())
			advance(fake, testTick)
			h.Stop() // returns once every task it started has returned

			s := h.Stats()
			require.Equal(t, uint64(1), s.PeriodicRuns, "Every's runs: %v", s)
			require.Equal(t, uint64(3), s.TaskPanics, "TaskPanics: AfterFunc, the struct task, Every's run: %v", s)
			require.Equal(t, uint64(1), s.HookPanics, "HookPanics: %v", s)
			require.Equal(t, uint64(2), s.Goexits, "Goexits: the TaskFunc and a hook: %v", s)

			const pkg = "github.com/wheeltimer/wheeltimer/hashedwheel."
			require.ElementsMatch(t, []string{pkg + "panickingFunc", "*hashedwheel.hookTask", pkg + "(*panicSignal).run-fm"},
				records.loggedTasks("hashedwheel: TimerTask panicked"), "tasks named in the panic lines")
			require.Equal(t, []string{"*hashedwheel.hookTask"},
				records.loggedTasks("hashedwheel: Cancelled hook panicked"), "task named in the hook's panic line")
			require.Equal(t, []string{pkg + "exitingTaskFunc"},
				records.loggedTasks("hashedwheel: TimerTask called runtime.Goexit; its goroutine ended, the timer carries on"))
			require.Equal(t, []string{"*hashedwheel.hookTask"},
				records.loggedTasks("hashedwheel: Cancelled hook called runtime.Goexit; its goroutine ended, the timer carries on"))
		})
	}
}

// TestTaskNameNamesFunctionsAndTypes: a function task is named by its
// function, a closure by the function it is in, any other task by its
// type; the Timeout's String names the function too, not its address.
func TestTaskNameNamesFunctionsAndTypes(t *testing.T) {
	const pkg = "github.com/wheeltimer/wheeltimer/hashedwheel."
	closure := func() {}
	for _, tc := range []struct {
		task TimerTask
		want string
	}{
		{plainFunc(panickingFunc), pkg + "panickingFunc"},
		{TaskFunc(exitingTaskFunc), pkg + "exitingTaskFunc"},
		{plainFunc(closure), pkg + "TestTaskNameNamesFunctionsAndTypes.func1"},
		{&scheduledTask{f: panickingFunc}, pkg + "panickingFunc"},
		{&hookTask{}, "*hashedwheel.hookTask"},
		{plainFunc(nil), "hashedwheel.plainFunc"},
	} {
		require.Equal(t, tc.want, taskName(tc.task))
	}
	h, _ := newFakeTimer(t)
	to, err := h.AfterFunc(time.Hour, panickingFunc)
	require.NoError(t, err)
	require.Contains(t, to.(*timeout).String(), "task: "+pkg+"panickingFunc)")
}

// secretTask holds a secret and a map its owner writes under its own
// lock, then panics or calls runtime.Goexit as it runs.
type secretTask struct {
	token  string
	mu     sync.Mutex
	labels map[int]int
	exit   bool
}

func (s *secretTask) Run(Timeout) {
	if s.exit {
		runtime.Goexit()
	}
	panic("task exploded")
}

// TestALogLineNamesTheTaskByItsTypeOnly: a task that panics, or calls
// runtime.Goexit, while its owner writes its map under its own lock, is
// logged by its type alone: no field of it, the secret included, is read
// or written to the log. A line that formatted the task with %v read the
// map as its owner wrote it, and printed the secret.
func TestALogLineNamesTheTaskByItsTypeOnly(t *testing.T) {
	for _, exit := range []bool{false, true} {
		t.Run(fmt.Sprintf("Goexit=%v", exit), func(t *testing.T) {
			logs, logger := newLogBuffer()
			h := startTimer(t, WithLogger(logger))
			task := &secretTask{token: "hunter2", labels: map[int]int{}, exit: exit}
			stop := make(chan struct{})
			writing := make(chan struct{})
			go func() {
				defer close(writing)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					task.mu.Lock()
					task.labels[i%64] = i
					task.mu.Unlock()
				}
			}()
			mustSchedule(t, h, task, 0)
			require.Eventually(t, func() bool { return h.Stats().TaskPanics+h.Stats().Goexits == 1 },
				10*time.Second, time.Millisecond)
			close(stop)
			<-writing
			h.Stop()
			require.Contains(t, logs.String(), "*hashedwheel.secretTask")
			require.NotContains(t, logs.String(), "hunter2", "a field of the task in the log")
		})
	}
}
