package hashedwheel

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layers lists the package's files from the bottom up, as docs/design.md
// does: the code of a file uses only what its own layer or the layers below
// declare, functions, methods, types, fields, constants and variables
// alike, so that a reader can take the files in this order, and a
// timeout's trip from NewTimeout to its task running goes down them.
var layers = [][]string{
	{"doc.go", "errors.go", "timer.go", "state.go", "bucket.go", "staging.go", "counters.go", "timebase.go",
		"options.go", "timer_data.go", "verify_off.go", "verify_on.go"},
	{"run.go", "periodic.go", "usercode.go"},
	{"wheel.go"},
	{"intake.go"},
	{"timeout.go"},
	{"worker.go"},
	{"stats.go", "stats_forms.go"},
	{"hashed_wheel_timer.go"},
	{"every.go", "schedule.go", "stop.go", "chan_timer.go", "ticker.go"},
	{"context.go", "context_afterfunc.go"},
	{"interface.go"},
}

// upwardAllowed lists the uses that may reach up a layer, each with its
// reason: a use is written "file: name of file".
var upwardAllowed = map[string]string{
	// The timer holds its worker, and the worker its timer: one of the two
	// fields must name a type declared above it, and the worker's type
	// stays with the worker's code, which uses every layer below it.
	"timer_data.go: worker of worker.go": "the timer's field worker *worker",
}

// TestFilesAreLayered type-checks the package and checks every use of
// what it declares against layers: none in a file reaches up into a file
// above it but those upwardAllowed lists, each of which is still there,
// and every file has its place.
func TestFilesAreLayered(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: type-checking the package from source takes a few seconds")
	}
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	upward, unplaced, err := upwardUses(fset, files, layers)
	require.NoError(t, err)
	assert.Empty(t, unplaced, "files with no layer: add them to layers and to docs/design.md")
	var wrong []string
	for _, use := range upward {
		if _, ok := upwardAllowed[use]; !ok {
			wrong = append(wrong, use)
		}
	}
	assert.Empty(t, wrong, "uses up into a file above")
	for use := range upwardAllowed {
		assert.Contains(t, upward, use, "an allowed upward use that is no longer there: drop it from upwardAllowed")
	}
}

// TestLayerCheckFindsUpwardUses runs the check on a small package in
// which the lower file uses each kind of thing the upper one declares.
func TestLayerCheckFindsUpwardUses(t *testing.T) {
	src := map[string]string{
		"low.go": `package p
type L struct{ u *U }
func low(l L) int { return l.u.f + k + v + up() + l.u.m() }`,
		"up.go": `package p
type U struct{ f int }
const k = 1
var v = 2
func up() int { return low(L{}) }
func (U) m() int { return 0 }`,
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range []string{"low.go", "up.go"} {
		f, err := parser.ParseFile(fset, name, src[name], 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	_, unplaced, err := upwardUses(fset, files, [][]string{{"low.go"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"up.go"}, unplaced)
	upward, unplaced, err := upwardUses(fset, files, [][]string{{"low.go"}, {"up.go"}})
	require.NoError(t, err)
	assert.Empty(t, unplaced)
	assert.ElementsMatch(t, []string{
		"low.go: U of up.go", "low.go: f of up.go", "low.go: k of up.go",
		"low.go: v of up.go", "low.go: up of up.go", "low.go: m of up.go",
	}, upward, "each kind of upward use is found once; the downward ones of up.go are not")
}

// upwardUses type-checks files as one package and returns, sorted and
// each once, the uses of what the package declares, types, fields,
// methods, functions, constants and variables, in a file of a lower layer
// than the file that declares it, written "file: name of file"; and the
// files that layers does not place. The files are checked once as the
// wheeltimer_verify build tag sees them and once as a build without it
// does, so that both files of the switch are checked.
func upwardUses(fset *token.FileSet, files []*ast.File, layers [][]string) (upward, unplaced []string, err error) {
	layerOf := map[string]int{}
	for i, names := range layers {
		for _, f := range names {
			layerOf[f] = i
		}
	}
	for _, f := range files {
		name := filepath.Base(fset.Position(f.Pos()).Filename)
		if _, ok := layerOf[name]; !ok {
			unplaced = append(unplaced, name)
		}
	}
	imp := importer.ForCompiler(fset, "source", nil) // one, to import each package once
	for _, group := range buildGroups(files) {
		conf := types.Config{Importer: imp}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
		pkg, err := conf.Check("github.com/wheeltimer/wheeltimer/hashedwheel", fset, group, info)
		if err != nil {
			return nil, nil, err
		}
		for id, obj := range info.Uses {
			if obj.Pkg() != pkg {
				continue
			}
			from := filepath.Base(fset.Position(id.Pos()).Filename)
			to := filepath.Base(fset.Position(obj.Pos()).Filename)
			if layerOf[from] < layerOf[to] {
				upward = append(upward, from+": "+obj.Name()+" of "+to)
			}
		}
	}
	slices.Sort(upward)
	return slices.Compact(upward), unplaced, nil
}

// buildGroups returns the sets of files to type-check: the files of a
// build without the wheeltimer_verify tag, then those of a build with it;
// or all of them, if none has the tag in its //go:build line.
func buildGroups(files []*ast.File) [][]*ast.File {
	var off, on []*ast.File
	tagged := false
	for _, f := range files {
		switch buildLine(f) {
		case "wheeltimer_verify":
			on, tagged = append(on, f), true
		case "!wheeltimer_verify":
			off, tagged = append(off, f), true
		default:
			off, on = append(off, f), append(on, f)
		}
	}
	if !tagged {
		return [][]*ast.File{files}
	}
	return [][]*ast.File{off, on}
}

// buildLine returns the constraint of f's //go:build line, if any.
func buildLine(f *ast.File) string {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if expr, ok := strings.CutPrefix(c.Text, "//go:build "); ok {
				return strings.TrimSpace(expr)
			}
		}
	}
	return ""
}
