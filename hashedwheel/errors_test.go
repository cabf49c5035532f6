package hashedwheel

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sentinel errors' documentation names, in its first sentence, the
// functions and methods that return each: the tests below call every
// exported function and method of the package that returns an error, in
// the situation of each sentinel, and compare.

// sentinelEnv is a timer in one of the situations the sentinels are for,
// with a channel timer and a ticker made on it before.
type sentinelEnv struct {
	h   *HashedWheelTimer
	tim *ChanTimer
	tk  *Ticker
}

// argKind says which argument a caller passes wrong, if any.
type argKind int

const (
	validArgs argKind = iota
	nilFunc
	badPeriod
	badSchedule
	badOption
)

// hourly is a Scheduler whose runs are an hour apart.
type hourly struct{}

func (hourly) Next(t time.Time) time.Time { return t.Add(time.Hour) }

// errorCallers calls each exported function and method of the package
// that returns an error, with the arguments of kind a, and returns the
// error; the key is the name the documentation gives it.
var errorCallers = map[string]func(e sentinelEnv, a argKind) error{
	"New": func(_ sentinelEnv, a argKind) error {
		opts := []Option{WithLogger(discardLogger())}
		if a == badOption {
			opts = append(opts, WithTickDuration(0))
		}
		h, err := New(opts...)
		if err == nil {
			h.Stop()
		}
		return err
	},
	"Start": func(e sentinelEnv, _ argKind) error { return e.h.Start() },
	"NewTimeout": func(e sentinelEnv, a argKind) error {
		var task TimerTask = TaskFunc(func(Timeout) {})
		if a == nilFunc {
			task = nil
		}
		_, err := e.h.NewTimeout(task, time.Hour)
		return err
	},
	"NewTimeouts": func(e sentinelEnv, a argKind) error {
		var task TimerTask = TaskFunc(func(Timeout) {})
		if a == nilFunc {
			task = nil
		}
		_, err := e.h.NewTimeouts(time.Hour, TaskFunc(func(Timeout) {}), task)
		return err
	},
	"AfterFunc": func(e sentinelEnv, a argKind) error {
		f := func() {}
		if a == nilFunc {
			f = nil
		}
		_, err := e.h.AfterFunc(time.Hour, f)
		return err
	},
	"Every": func(e sentinelEnv, a argKind) error {
		f, period := func() {}, time.Hour
		if a == nilFunc {
			f = nil
		}
		if a == badPeriod {
			period = 0
		}
		_, err := e.h.Every(period, f)
		return err
	},
	"ScheduleFunc": func(e sentinelEnv, a argKind) error {
		var s Scheduler = hourly{}
		f := func() {}
		if a == nilFunc {
			f = nil
		}
		if a == badSchedule {
			s = nil
		}
		_, err := e.h.ScheduleFunc(s, f)
		return err
	},
	"NewTimer": func(e sentinelEnv, _ argKind) error {
		tim, err := e.h.NewTimer(time.Hour)
		if err == nil {
			tim.Stop()
		}
		return err
	},
	"NewTicker": func(e sentinelEnv, a argKind) error {
		period := time.Hour
		if a == badPeriod {
			period = 0
		}
		tk, err := e.h.NewTicker(period)
		if err == nil {
			tk.Stop()
		}
		return err
	},
	"StopContext": func(e sentinelEnv, _ argKind) error {
		if e.h.state.Load() != timerStopped {
			return nil // stopping would change the situation of the calls after it
		}
		_, err := e.h.StopContext(context.Background())
		return err
	},
	"ChanTimer.Reset": func(e sentinelEnv, _ argKind) error {
		e.tim.Stop()
		_, err := e.tim.Reset(time.Hour)
		e.tim.Stop()
		return err
	},
	"Ticker.Reset": func(e sentinelEnv, a argKind) error {
		period := time.Hour
		if a == badPeriod {
			period = 0
		}
		err := e.tk.Reset(period)
		e.tk.Stop()
		return err
	},
}

// sentinelSituations says, for each sentinel, the timer's situation and
// the arguments that call for it.
var sentinelSituations = []struct {
	name     string
	sentinel error
	stopped  bool // the timer is stopped
	full     bool // at its pending limit
	bubble   bool // called in a testing/synctest bubble the timer was not made in
	args     argKind
}{
	{name: "ErrStopped", sentinel: ErrStopped, stopped: true},
	{name: "ErrTooManyPendingTimeouts", sentinel: ErrTooManyPendingTimeouts, full: true},
	{name: "ErrNilTask", sentinel: ErrNilTask, args: nilFunc},
	{name: "ErrInvalidPeriod", sentinel: ErrInvalidPeriod, args: badPeriod},
	{name: "ErrInvalidSchedule", sentinel: ErrInvalidSchedule, args: badSchedule},
	{name: "ErrSynctestBubble", sentinel: ErrSynctestBubble, bubble: true},
	{name: "ErrInvalidOption", sentinel: ErrInvalidOption, args: badOption},
}

// TestEveryErrorReturningMethodHasACaller: every exported function and
// method of the package whose last result is an error is in
// errorCallers, so that the test below calls it.
func TestEveryErrorReturningMethodHasACaller(t *testing.T) {
	errorType := reflect.TypeFor[error]()
	returnsError := func(ft reflect.Type) bool { return ft.NumOut() > 0 && ft.Out(ft.NumOut()-1) == errorType }
	for _, typ := range []reflect.Type{reflect.TypeFor[*HashedWheelTimer](), reflect.TypeFor[*ChanTimer](), reflect.TypeFor[*Ticker]()} {
		prefix := strings.TrimPrefix(typ.String(), "*hashedwheel.") + "."
		if typ == reflect.TypeFor[*HashedWheelTimer]() {
			prefix = ""
		}
		for i := range typ.NumMethod() {
			if m := typ.Method(i); returnsError(m.Type) {
				_, ok := errorCallers[prefix+m.Name]
				assert.True(t, ok, "%s%s returns an error: add it to errorCallers", prefix, m.Name)
			}
		}
	}
	for _, fn := range exportedFuncsReturningError(t) {
		_, ok := errorCallers[fn]
		assert.True(t, ok, "%s returns an error: add it to errorCallers", fn)
	}
}

// exportedFuncsReturningError returns the package's exported functions
// whose last result is error, from its source.
func exportedFuncsReturningError(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var names []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			results := fn.Type.Results.List
			if id, ok := results[len(results)-1].Type.(*ast.Ident); ok && id.Name == "error" {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}

// TestSentinelDocsNameExactlyTheMethodsThatReturnThem: for each sentinel
// error, every caller is called in the sentinel's situation; those whose
// error wraps the sentinel are exactly the names the first sentence of
// its documentation gives.
func TestSentinelDocsNameExactlyTheMethodsThatReturnThem(t *testing.T) {
	docs := sentinelFirstSentences(t)
	for _, sit := range sentinelSituations {
		t.Run(sit.name, func(t *testing.T) {
			var returning []string
			call := func() {
				for name, caller := range errorCallers {
					e := newSentinelEnv(t, sit.stopped, sit.full)
					if sit.bubble {
						var err error
						synctest.Test(t, func(*testing.T) { err = caller(e, sit.args) })
						if errors.Is(err, sit.sentinel) {
							returning = append(returning, name)
						}
						continue
					}
					if errors.Is(caller(e, sit.args), sit.sentinel) {
						returning = append(returning, name)
					}
				}
			}
			call()
			var documented []string
			for _, word := range regexp.MustCompile(`\b(?:[A-Z][A-Za-z]+\.)?[A-Z][A-Za-z]+\b`).FindAllString(docs[sit.name], -1) {
				if _, ok := errorCallers[word]; ok && !slices.Contains(documented, word) {
					documented = append(documented, word)
				}
			}
			slices.Sort(returning)
			slices.Sort(documented)
			assert.Equal(t, documented, returning, "the names in %s's first sentence, and those that return it", sit.name)
		})
	}
}

// newSentinelEnv returns a started timer with a ChanTimer and a Ticker
// made on it, then stopped, or brought to its limit, as asked.
func newSentinelEnv(t *testing.T, stopped, full bool) sentinelEnv {
	t.Helper()
	opts := []Option{WithLogger(discardLogger())}
	if full {
		opts = append(opts, WithMaxPendingTimeouts(2))
	}
	h := startTimer(t, opts...)
	tim, err := h.NewTimer(time.Hour)
	require.NoError(t, err)
	tk, err := h.NewTicker(time.Hour)
	require.NoError(t, err)
	t.Cleanup(func() { tim.Stop(); tk.Stop() })
	if stopped {
		h.Stop()
	}
	return sentinelEnv{h: h, tim: tim, tk: tk}
}

// sentinelFirstSentences returns the first sentence of the documentation
// of each sentinel error in errors.go.
func sentinelFirstSentences(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, parser.ParseComments)
	require.NoError(t, err)
	docs := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gen.Specs {
			if v, ok := spec.(*ast.ValueSpec); ok && v.Doc != nil {
				doc := strings.Join(strings.Fields(v.Doc.Text()), " ")
				first, _, _ := strings.Cut(doc, ". ")
				docs[v.Names[0].Name] = first
			}
		}
	}
	for _, sit := range sentinelSituations {
		require.NotEmpty(t, docs[sit.name], "no documented %s in errors.go", sit.name)
	}
	return docs
}
