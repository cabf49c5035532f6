package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// write writes files, by slash path relative to dir, under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// repository is a small repository as this one is laid out: the library,
// an exporter that requires it, a tool that does not, and go.work.
func repository(t *testing.T) string {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n\n## [1.2.0] - 2026-11-28\n\n## [1.1.0] - 2026-11-01\n",
		"go.mod":       "module github.com/wheeltimer/wheeltimer\n\ngo 1.25.0\n",
		"timer.go":     "package wheeltimer\n",
		".git":         "gitdir: elsewhere\n",
		"exporters/x/go.mod": "module github.com/wheeltimer/wheeltimer/exporters/x\n\ngo 1.25.0\n\n" +
			"require github.com/wheeltimer/wheeltimer v1.2.0\n",
		"exporters/x/x.go":      "package x\n",
		"tool/go.mod":           "module example.com/tool\n\ngo 1.25.0\n",
		"testdata/m/go.mod":     "module example.com/ignored\n",
		"go.work":               "go 1.25.0\n\nuse (\n\t.\n\t./exporters/x\n\t./tool\n)\n\nreplace github.com/wheeltimer/wheeltimer v1.2.0 => ./\n",
		"docs/notes.md":         "notes\n",
		"exporters/README.md":   "exporters\n",
		"tool/main.go":          "package main\n",
		"exporters/x/x_test.go": "package x\n",
	})
	return dir
}

// TestNewestReleaseIsTheFirstVersionSection: the newest version of the
// changelog is its first "## [X.Y.Z] - DATE" section, [Unreleased]
// skipped; a changelog without one is an error.
func TestNewestReleaseIsTheFirstVersionSection(t *testing.T) {
	dir := repository(t)
	rel, err := newestRelease(filepath.Join(dir, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "v1.2.0" || !rel.Date.Equal(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("newest release %+v, expected v1.2.0 of 2026-11-28", rel)
	}
	write(t, dir, map[string]string{"CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n"})
	if _, err := newestRelease(filepath.Join(dir, "CHANGELOG.md")); err == nil {
		t.Error("no version section, no error")
	}
}

// TestRunChecksEveryGoModAndTheWorkspace: a replace directive, a module
// requiring another version of the library, a module requiring it that
// go.work does not use and a go.work without the library's replacement
// are each named; a module that does not require the library is not.
func TestRunChecksEveryGoModAndTheWorkspace(t *testing.T) {
	dir := repository(t)
	if _, err := run(dir, ""); err != nil {
		t.Fatalf("a repository ready to publish: %v", err)
	}
	write(t, dir, map[string]string{
		"exporters/x/go.mod": "module github.com/wheeltimer/wheeltimer/exporters/x\n\ngo 1.25.0\n\n" +
			"require github.com/wheeltimer/wheeltimer v1.1.0\n\nreplace github.com/wheeltimer/wheeltimer => ../..\n",
		"examples/y/go.mod": "module github.com/wheeltimer/wheeltimer/examples/y\n\ngo 1.25.0\n\n" +
			"require github.com/wheeltimer/wheeltimer v1.2.0\n",
		"examples/y/baseline/go.mod": "module github.com/wheeltimer/wheeltimer/examples/y/baseline\n\ngo 1.26.0\n",
		"go.work":                    "go 1.25.0\n\nuse (\n\t.\n\t./exporters/x\n\t./tool\n\t./gone\n)\n",
	})
	_, err := run(dir, "")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"exporters/x/go.mod: replace github.com/wheeltimer/wheeltimer",
		"exporters/x/go.mod: requires github.com/wheeltimer/wheeltimer v1.1.0, expected v1.2.0",
		"go.work: no use of examples/y",
		"go.work: use gone, which holds no module",
		"go.work: expected replace github.com/wheeltimer/wheeltimer v1.2.0 => ./",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "baseline") {
		t.Errorf("a module that does not require the library needs no use:\n%v", err)
	}
}

// TestRunWritesAProxyOfTheLibraryAndWhatRequiresIt: the proxy holds the
// library and the exporter that requires it at the newest version, each
// zip its module's files only (no nested module, no .git), each .mod its
// go.mod, each .info the version and the changelog's date; the tool that
// does not require the library is left out.
func TestRunWritesAProxyOfTheLibraryAndWhatRequiresIt(t *testing.T) {
	dir := repository(t)
	out := filepath.Join(t.TempDir(), "proxy")
	version, err := run(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	if version != "v1.2.0" {
		t.Errorf("version %s", version)
	}
	for path, want := range map[string][]string{
		"github.com/wheeltimer/wheeltimer":             {"CHANGELOG.md", "docs/notes.md", "exporters/README.md", "go.mod", "go.work", "timer.go"},
		"github.com/wheeltimer/wheeltimer/exporters/x": {"go.mod", "x.go", "x_test.go"},
	} {
		at := filepath.Join(out, filepath.FromSlash(path), "@v")
		list, err := os.ReadFile(filepath.Join(at, "list"))
		if err != nil || string(list) != "v1.2.0\n" {
			t.Errorf("%s: list %q, %v", path, list, err)
		}
		var info struct{ Version, Time string }
		data, err := os.ReadFile(filepath.Join(at, "v1.2.0.info"))
		if err != nil || json.Unmarshal(data, &info) != nil || info.Version != "v1.2.0" || info.Time != "2026-11-28T00:00:00Z" {
			t.Errorf("%s: info %s, %v", path, data, err)
		}
		mod, err := os.ReadFile(filepath.Join(at, "v1.2.0.mod"))
		if err != nil || !strings.HasPrefix(string(mod), "module "+path+"\n") {
			t.Errorf("%s: mod %q, %v", path, mod, err)
		}
		z, err := zip.OpenReader(filepath.Join(at, "v1.2.0.zip"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range z.File {
			names = append(names, strings.TrimPrefix(f.Name, path+"@v1.2.0/"))
		}
		z.Close()
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("%s: zip holds %v, expected %v", path, names, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "example.com")); !os.IsNotExist(err) {
		t.Errorf("the tool, which does not require the library, is in the proxy: %v", err)
	}
}

// TestTheRepositoryIsReadyToPublish: this repository passes the checks.
func TestTheRepositoryIsReadyToPublish(t *testing.T) {
	if _, err := run("../..", ""); err != nil {
		t.Fatal(err)
	}
}
