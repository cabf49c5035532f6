// Package readme holds the test that keeps the snippets of the README and docs/testing.md honest.
package readme

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository, from this package's directory.
const root = "../.."

// guides are the user's guides whose Go snippets come from tests.
var guides = []string{"README.md", "docs/testing.md"}

// TestEverySnippetIsInATestFile: each Go snippet of the guides appears,
// line for line (indentation aside), in a _test.go file of the repository,
// so that it compiles as written; the tests there run it.
func TestEverySnippetIsInATestFile(t *testing.T) {
	var snippets [][]string
	for _, guide := range guides {
		md, err := os.ReadFile(filepath.Join(root, guide))
		require.NoError(t, err)
		found := goSnippets(md)
		require.NotEmpty(t, found, guide)
		snippets = append(snippets, found...)
	}
	var tests [][]string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			tests = append(tests, lines(src))
		}
		return nil
	}))
	for _, snippet := range snippets {
		assert.True(t, inAny(snippet, tests), "this snippet of a guide is in no test file:\n%s", strings.Join(snippet, "\n"))
	}
}

// goSnippets returns the lines of each ```go block of a Markdown text.
func goSnippets(md []byte) [][]string {
	var snippets [][]string
	var cur []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```go"):
			in, cur = true, nil
		case in && strings.HasPrefix(line, "```"):
			in = false
			snippets = append(snippets, cur)
		case in:
			if l := strings.TrimSpace(line); l != "" {
				cur = append(cur, l)
			}
		}
	}
	return snippets
}

// lines returns the non-empty lines of src, trimmed.
func lines(src []byte) []string {
	var out []string
	for _, l := range strings.Split(string(src), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// inAny reports whether snippet is a run of consecutive lines of a file.
func inAny(snippet []string, files [][]string) bool {
	for _, f := range files {
		for i := 0; i+len(snippet) <= len(f); i++ {
			if slices.Equal(f[i:i+len(snippet)], snippet) {
				return true
			}
		}
	}
	return false
}
