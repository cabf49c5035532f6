package hashedwheel

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errorCallers calls each method of a HashedWheelTimer that returns an
// error, with valid arguments, and returns the error.
var errorCallers = map[string]func(h *HashedWheelTimer) error{
	"Start": func(h *HashedWheelTimer) error { return h.Start() },
	"NewTimeout": func(h *HashedWheelTimer) error {
		_, err := h.NewTimeout(TaskFunc(func(Timeout) {}), time.Hour)
		return err
	},
	"AfterFunc": func(h *HashedWheelTimer) error {
		_, err := h.AfterFunc(time.Hour, func() {})
		return err
	},
	"Every": func(h *HashedWheelTimer) error {
		_, err := h.Every(time.Hour, func() {})
		return err
	},
	"ScheduleFunc": func(h *HashedWheelTimer) error {
		_, err := h.ScheduleFunc(hourly{}, func() {})
		return err
	},
	"NewTimer": func(h *HashedWheelTimer) error {
		_, err := h.NewTimer(time.Hour)
		return err
	},
	"NewTicker": func(h *HashedWheelTimer) error {
		_, err := h.NewTicker(time.Hour)
		return err
	},
	"StopContext": func(h *HashedWheelTimer) error {
		_, err := h.StopContext(context.Background())
		return err
	},
}

// hourly is a Scheduler whose runs are an hour apart.
type hourly struct{}

func (hourly) Next(t time.Time) time.Time { return t.Add(time.Hour) }

// TestErrStoppedDocNamesExactlyTheMethodsThatReturnIt: every method of a
// stopped timer that returns an error is called, on a timer stopped before
// it started and on one stopped while running; those that fail with
// ErrStopped are exactly the methods the first sentence of ErrStopped's
// documentation names.
func TestErrStoppedDocNamesExactlyTheMethodsThatReturnIt(t *testing.T) {
	errorType := reflect.TypeFor[error]()
	timerType := reflect.TypeFor[*HashedWheelTimer]()
	var methods []string // every method with an error result
	for i := range timerType.NumMethod() {
		m := timerType.Method(i)
		for j := range m.Type.NumOut() {
			if m.Type.Out(j) == errorType {
				methods = append(methods, m.Name)
				_, ok := errorCallers[m.Name]
				assert.True(t, ok, "%s returns an error: add it to errorCallers, and to ErrStopped's "+
					"documentation if it returns ErrStopped once the timer is stopped", m.Name)
			}
		}
	}

	var returning []string
	for name, call := range errorCallers {
		var stopped []bool
		for _, start := range []bool{false, true} {
			h, err := New(WithLogger(discardLogger()))
			require.NoError(t, err)
			if start {
				require.NoError(t, h.Start())
			}
			h.Stop()
			stopped = append(stopped, errors.Is(call(h), ErrStopped))
		}
		require.Equal(t, stopped[0], stopped[1], "%s: the same before and after the timer started", name)
		if stopped[0] {
			returning = append(returning, name)
		}
	}

	var documented []string
	for _, word := range regexp.MustCompile(`[A-Z][A-Za-z]+`).FindAllString(errStoppedFirstSentence(t), -1) {
		if slices.Contains(methods, word) {
			documented = append(documented, word)
		}
	}
	slices.Sort(returning)
	slices.Sort(documented)
	assert.Equal(t, returning, documented, "the methods that return ErrStopped, and those its documentation names")
}

// errStoppedFirstSentence returns the first sentence of ErrStopped's doc
// comment in errors.go.
func errStoppedFirstSentence(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, parser.ParseComments)
	require.NoError(t, err)
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gen.Specs {
			v, ok := spec.(*ast.ValueSpec)
			if ok && v.Names[0].Name == "ErrStopped" && v.Doc != nil {
				doc := strings.Join(strings.Fields(v.Doc.Text()), " ")
				first, _, _ := strings.Cut(doc, ". ")
				return first
			}
		}
	}
	t.Fatal("no documented ErrStopped in errors.go")
	return ""
}
