package keyed

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's keyed snippet is readmeSnippet's body in example_test.go,
// which compiles and runs as ExampleNew.
func TestREADMESnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, after, found := strings.Cut(string(readme), "**Keyed timers.**")
	require.True(t, found, "the README has no keyed timers paragraph")
	_, after, found = strings.Cut(after, "```go\n")
	require.True(t, found)
	snippet, _, found := strings.Cut(after, "```")
	require.True(t, found)

	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, body, found := strings.Cut(string(example), "func readmeSnippet(")
	require.True(t, found)
	_, body, _ = strings.Cut(body, "{\n")
	body, _, _ = strings.Cut(body, "\treturn nil\n}")
	var unindented strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		unindented.WriteString(strings.TrimPrefix(line, "\t"))
	}
	require.Equal(t, snippet, unindented.String())
}
