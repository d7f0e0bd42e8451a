//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFilesystemPassPathAllocatesNothing scans the typical pair, which passes.
func TestFilesystemPassPathAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	g := &filesystem{rm: true, traversal: true, sensitive: true, limit: scanLimit{maxNodes: defaultMaxNodes}}
	sc := newFakeScope(&ev.In)
	allocs := testing.AllocsPerRun(100, func() { g.scan(&ev.In, sc) })
	require.Zero(t, sc.hits)
	require.Zero(t, allocs)
}
