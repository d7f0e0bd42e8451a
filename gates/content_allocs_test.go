//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContentPassPathAllocatesNothing scans the typical pair, which passes.
func TestContentPassPathAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	g := &content{checkEmpty: true, refusals: true, phrases: newPhraseSet(refusalPhrases), limit: scanLimit{maxNodes: defaultMaxNodes}}
	sc := newFakeScope(&ev.In)
	allocs := testing.AllocsPerRun(100, func() { g.scan(&ev.In, sc) })
	require.Zero(t, sc.hits)
	require.Zero(t, allocs)
}
