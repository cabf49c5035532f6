package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// repoModule is a module of the repository.
type repoModule struct {
	Dir  string // relative to the repository's root, "." for the library
	Path string
	Mod  []byte // its go.mod
	File *modfile.File
}

// requires reports whether the module requires path.
func (m repoModule) requires(path string) bool {
	for _, r := range m.File.Require {
		if r.Mod.Path == path {
			return true
		}
	}
	return false
}

// findModules returns every module under root, the directories of a
// go.mod file, skipping hidden directories, testdata and vendor.
func findModules(root string) ([]repoModule, error) {
	var mods []repoModule
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || name != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(path, data, nil)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		mods = append(mods, repoModule{Dir: filepath.ToSlash(dir), Path: f.Module.Mod.Path, Mod: data, File: f})
		return nil
	})
	return mods, err
}
