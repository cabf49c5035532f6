// Command modproxy checks that the repository's modules are ready to be
// published at the newest version of CHANGELOG.md, and writes a Go module
// proxy holding them at that version, built from the working tree, in the
// file layout that GOPROXY=file://DIR reads.
//
//	go run ./scripts/modproxy [-out DIR] [REPOSITORY]
//
// The checks: every go.mod of the repository has no replace directive and
// requires the library, if it does, at the newest version of CHANGELOG.md;
// go.work uses every module and replaces that version of the library with
// the working tree. With -out, DIR then receives the library and every
// module that requires it. It prints the version.
//
// scripts/install-check.sh installs the library and its exporters from
// such a proxy as a user does; scripts/tidy.sh tidies a module through it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// library is the module path of the library, which the other modules of
// the repository require.
const library = "github.com/wheeltimer/wheeltimer"

func main() {
	out := flag.String("out", "", "write the proxy to this directory, which must not exist")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	version, err := run(root, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	fmt.Println(version)
}

// run checks the repository at root and, if out is not empty, writes the
// proxy there; it returns the version.
func run(root, out string) (string, error) {
	rel, err := newestRelease(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return "", err
	}
	mods, err := findModules(root)
	if err != nil {
		return "", err
	}
	if err := errors.Join(checkModules(mods, rel.Version), checkWorkspace(root, mods, rel.Version)); err != nil {
		return "", err
	}
	if out != "" {
		if err := writeProxy(out, root, mods, rel); err != nil {
			return "", err
		}
	}
	return rel.Version, nil
}
