//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSchemaPassPathAllocations measures, and does not forbid, the
// allocations of a passing validation: the validator library decodes the
// document into map[string]any on every call. The number is reported in
// gates/README.md.
func TestSchemaPassPathAllocations(t *testing.T) {
	g, _, err := buildSchema(t, "file: schemas/response.json", false)
	require.NoError(t, err)
	ev := typicalEval(t)
	sc := newFakeScope(&ev.In)
	allocs := testing.AllocsPerRun(100, func() { g.scan(&ev.In, sc) })
	require.Zero(t, sc.hits)
	t.Logf("schema: %.0f allocations per passing typical pair", allocs)
	require.Positive(t, allocs, "the validator allocates; if this changes, update gates/README.md")
}
