//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPIIPassPathAllocatesNothing scans the typical pair, which passes.
func TestPIIPassPathAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	g := &pii{email: true, ssn: true, phone: true, limit: scanLimit{maxNodes: defaultMaxNodes}}
	sc := newFakeScope(&ev.In)
	allocs := testing.AllocsPerRun(100, func() { g.scan(&ev.In, sc) })
	require.Zero(t, sc.hits)
	require.Zero(t, allocs)
}
