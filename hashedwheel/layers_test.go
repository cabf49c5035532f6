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
// does: the code of a file calls only functions of its own layer or of the
// layers below, so that a reader can take the files in this order, and a
// timeout's trip from NewTimeout to its task running goes down them.
var layers = [][]string{
	{"doc.go", "errors.go", "timer.go", "state.go", "bucket.go", "staging.go", "counters.go", "timebase.go"},
	{"run.go", "periodic.go", "usercode.go"},
	{"wheel.go"},
	{"intake.go"},
	{"timeout.go"},
	{"worker_intake.go", "worker_expiry.go"},
	{"worker_shutdown.go"},
	{"worker.go"},
	{"options.go", "stats.go", "stats_forms.go"},
	{"hashed_wheel_timer.go"},
	{"every.go", "schedule.go", "stop.go", "context_afterfunc.go", "chan_timer.go", "ticker.go"},
	{"context.go"},
}

// TestFilesAreLayered type-checks the package and checks every use of one
// of its functions or methods against layers: none in a file reaches up
// into a file above it, and every file has its place.
func TestFilesAreLayered(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: type-checking the package from source takes a few seconds")
	}
	layerOf := map[string]int{}
	for i, files := range layers {
		for _, f := range files {
			layerOf[f] = i
		}
	}
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		_, placed := layerOf[name]
		assert.True(t, placed, "%s has no layer: add it to layers and to docs/design.md", name)
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check("github.com/wheeltimer/wheeltimer/hashedwheel", fset, files, info)
	require.NoError(t, err)
	var upward []string
	for id, obj := range info.Uses {
		if _, ok := obj.(*types.Func); !ok || obj.Pkg() != pkg {
			continue
		}
		from := fset.Position(id.Pos())
		to := fset.Position(obj.Pos()).Filename
		if layerOf[filepath.Base(from.Filename)] < layerOf[filepath.Base(to)] {
			upward = append(upward, from.String()+" uses "+obj.Name()+" of "+filepath.Base(to))
		}
	}
	slices.Sort(upward)
	assert.Empty(t, upward, "calls up into a file above")
}
