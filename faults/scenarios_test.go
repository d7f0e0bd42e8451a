package faults

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScenarioList: every scenario docs/reliability.md lists has a test
// (a scenario(t, id) call in this package), and every test's scenario is
// listed.
func TestScenarioList(t *testing.T) {
	doc, err := os.ReadFile("../docs/reliability.md")
	require.NoError(t, err)
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+/[a-z0-9-]+)` \\|").FindAllSubmatch(doc, -1) {
		listed = append(listed, string(m[1]))
	}
	require.NotEmpty(t, listed)

	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	var tested []string
	call := regexp.MustCompile(`scenario\(t, "([a-z0-9-]+/[a-z0-9-]+)"\)`)
	table := regexp.MustCompile(`\{"([a-z0-9-]+/[a-z0-9-]+)", `) // table-driven ids passed as tc.id
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, re := range []*regexp.Regexp{call, table} {
			for _, m := range re.FindAllSubmatch(src, -1) {
				tested = append(tested, string(m[1]))
			}
		}
	}
	slices.Sort(listed)
	slices.Sort(tested)
	require.Equal(t, slices.Compact(listed), slices.Compact(tested), "docs/reliability.md and the tests list the same scenarios")
}
