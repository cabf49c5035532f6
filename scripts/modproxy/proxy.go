package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// writeProxy writes to out, which must not exist, a module proxy in the
// layout GOPROXY=file:// reads (list, .info, .mod and .zip under
// <module>/@v/), holding the library and every module that requires it at
// rel's version, each zip made from the module's directory under root as
// the go command makes it from a tagged commit, nested modules left out.
func writeProxy(out, root string, mods []repoModule, rel release) error {
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	for _, m := range mods {
		if m.Path != library && !m.requires(library) {
			continue
		}
		if err := writeVersion(out, filepath.Join(root, filepath.FromSlash(m.Dir)), m, rel); err != nil {
			return fmt.Errorf("%s: %w", m.Dir, err)
		}
	}
	return nil
}

// writeVersion writes the files of m, in dir, at rel's version.
func writeVersion(out, dir string, m repoModule, rel release) error {
	v := module.Version{Path: m.Path, Version: rel.Version}
	escPath, err := module.EscapePath(v.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(v.Version)
	if err != nil {
		return err
	}
	at := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    string
	}{v.Version, rel.Date.UTC().Format("2006-01-02T15:04:05Z")})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":               []byte(v.Version + "\n"),
		escVersion + ".info": info,
		escVersion + ".mod":  m.Mod,
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	z, err := os.Create(filepath.Join(at, escVersion+".zip"))
	if err != nil {
		return err
	}
	files, err := moduleFiles(dir)
	if err != nil {
		z.Close()
		return err
	}
	if err := zip.Create(z, v, files); err != nil {
		z.Close()
		return err
	}
	return z.Close()
}

// moduleFiles returns the files of the module in dir, as the go command
// takes them from a commit: every regular file, but those of nested
// modules (a directory with a go.mod) and of version control (.git, a
// directory in a clone, a file in a worktree).
func moduleFiles(dir string) ([]zip.File, error) {
	var files []zip.File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch d.Name() {
		case ".git", ".hg", ".svn", ".bzr":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files = append(files, diskFile{slash: filepath.ToSlash(rel), path: path})
		return nil
	})
	return files, err
}

// diskFile is a file of a module's directory, for zip.Create.
type diskFile struct {
	slash string // relative to the module's directory
	path  string
}

func (f diskFile) Path() string                 { return f.slash }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.path) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }
