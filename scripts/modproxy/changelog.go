package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"time"
)

// release is a version of CHANGELOG.md: a section "## [X.Y.Z] - DATE".
type release struct {
	Version string // vX.Y.Z
	Date    time.Time
}

// versionHeading is the heading of a version's section; others, such as
// "## [Unreleased]", are not versions.
var versionHeading = regexp.MustCompile(`^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})\s*$`)

// newestRelease returns the first version section of the changelog at
// path: the newest, as the sections run from the newest down.
func newestRelease(path string) (release, error) {
	f, err := os.Open(path)
	if err != nil {
		return release{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := versionHeading.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		date, err := time.Parse(time.DateOnly, m[2])
		if err != nil {
			return release{}, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		return release{Version: "v" + m[1], Date: date}, nil
	}
	if err := sc.Err(); err != nil {
		return release{}, err
	}
	return release{}, fmt.Errorf("%s: no section \"## [X.Y.Z] - YYYY-MM-DD\"", path)
}
