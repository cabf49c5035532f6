package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/mod/modfile"
)

// checkModules returns an error naming each go.mod that has a replace
// directive, which a module published at a version must not, and each
// that requires the library at another version than version.
func checkModules(mods []repoModule, version string) error {
	var errs []error
	found := false
	for _, m := range mods {
		found = found || m.Path == library
		for _, r := range m.File.Replace {
			errs = append(errs, fmt.Errorf("%s/go.mod: replace %s: a published go.mod has none; go.work ties the modules for development",
				m.Dir, r.Old.Path))
		}
		for _, r := range m.File.Require {
			if r.Mod.Path == library && r.Mod.Version != version {
				errs = append(errs, fmt.Errorf("%s/go.mod: requires %s %s, expected %s, the newest version of CHANGELOG.md",
					m.Dir, library, r.Mod.Version, version))
			}
		}
	}
	if !found {
		errs = append(errs, fmt.Errorf("no module %s", library))
	}
	return errors.Join(errs...)
}

// checkWorkspace returns an error unless go.work, at root, uses every
// module of the library or requiring it, and no directory without one, and replaces the library at version with
// the working tree, where the modules that require that version find it.
func checkWorkspace(root string, mods []repoModule, version string) error {
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return err
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return err
	}
	var errs []error
	used := map[string]bool{}
	for _, u := range wf.Use {
		used[path.Clean(u.Path)] = true
	}
	for _, m := range mods {
		// A module that neither is the library nor requires it, such as
		// a baseline built on another library, stands apart.
		if !used[m.Dir] && (m.Path == library || m.requires(library)) {
			errs = append(errs, fmt.Errorf("go.work: no use of %s", m.Dir))
		}
		delete(used, m.Dir)
	}
	for dir := range used {
		errs = append(errs, fmt.Errorf("go.work: use %s, which holds no module", dir))
	}
	tied := false
	for _, r := range wf.Replace {
		tied = tied || r.Old.Path == library && r.Old.Version == version && path.Clean(r.New.Path) == "."
	}
	if !tied {
		errs = append(errs, fmt.Errorf("go.work: expected replace %s %s => ./, for the modules that require that version", library, version))
	}
	return errors.Join(errs...)
}
