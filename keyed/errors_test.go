package keyed

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
)

// keyedErrorCallers calls each exported function and method of the
// package that returns an error, on a set of float keys holding the key
// 1, with the wrong argument of each sentinel's situation when bad is set.
var keyedErrorCallers = map[string]func(timer hashedwheel.Timer, set *Timers[float64, int], sentinel error) error{
	"New": func(timer hashedwheel.Timer, _ *Timers[float64, int], sentinel error) error {
		if sentinel == ErrNilTimer {
			timer = nil
		}
		_, err := New(timer, func(float64, int) {})
		return err
	},
	"Set": func(_ hashedwheel.Timer, set *Timers[float64, int], sentinel error) error {
		key := 2.0
		if sentinel == ErrInvalidKey {
			key = math.NaN()
		}
		return set.Set(key, 0, time.Hour)
	},
	"Reschedule": func(_ hashedwheel.Timer, set *Timers[float64, int], sentinel error) error {
		key := 1.0
		if sentinel == ErrNotFound {
			key = 3
		}
		_, err := set.Reschedule(key, time.Hour)
		return err
	},
}

// TestSentinelDocsNameExactlyTheMethodsThatReturnThem: every exported
// function and method of the package that returns an error is called in
// each sentinel's situation; those whose error wraps the sentinel are
// exactly the names the first sentence of its documentation gives.
func TestSentinelDocsNameExactlyTheMethodsThatReturnThem(t *testing.T) {
	typ := reflect.TypeFor[*Timers[float64, int]]()
	errorType := reflect.TypeFor[error]()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		if m.Type.NumOut() > 0 && m.Type.Out(m.Type.NumOut()-1) == errorType {
			_, ok := keyedErrorCallers[m.Name]
			assert.True(t, ok, "%s returns an error: add it to keyedErrorCallers", m.Name)
		}
	}
	docs := keyedSentinelDocs(t)
	for name, sentinel := range map[string]error{"ErrNilTimer": ErrNilTimer, "ErrInvalidKey": ErrInvalidKey, "ErrNotFound": ErrNotFound} {
		var returning []string
		for method, call := range keyedErrorCallers {
			timer, err := hashedwheel.New()
			require.NoError(t, err)
			set, err := New(timer, func(float64, int) {})
			require.NoError(t, err)
			require.NoError(t, set.Set(1, 1, time.Hour))
			if errors.Is(call(timer, set, sentinel), sentinel) {
				returning = append(returning, method)
			}
			timer.Stop()
		}
		var documented []string
		for _, word := range regexp.MustCompile(`\b[A-Z][A-Za-z]+\b`).FindAllString(docs[name], -1) {
			if _, ok := keyedErrorCallers[word]; ok && !slices.Contains(documented, word) {
				documented = append(documented, word)
			}
		}
		slices.Sort(returning)
		slices.Sort(documented)
		assert.Equal(t, documented, returning, "the names in %s's first sentence, and those that return it", name)
	}
}

// keyedSentinelDocs returns the first sentence of each sentinel's
// documentation in timers.go.
func keyedSentinelDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "timers.go", nil, parser.ParseComments)
	require.NoError(t, err)
	docs := map[string]string{}
	for _, decl := range f.Decls {
		if gen, ok := decl.(*ast.GenDecl); ok && gen.Doc != nil && gen.Tok == token.VAR {
			v := gen.Specs[0].(*ast.ValueSpec)
			first, _, _ := strings.Cut(strings.Join(strings.Fields(gen.Doc.Text()), " "), ". ")
			docs[v.Names[0].Name] = first
		}
	}
	return docs
}
