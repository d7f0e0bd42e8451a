//go:build !race

package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestBadvCompliancePassAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	g := &badvCompliance{}
	in := &ev.In
	// Upper-case and padded ASCII entries are normalised without allocating.
	in.Request.BAdv = append(in.Request.BAdv, " Other-Blocked.COM ", "x.brand-one.com")
	allocs := testing.AllocsPerRun(100, func() {
		if g.Prepare(in) != "" {
			panic("skipped")
		}
		for i := range in.Bids {
			if g.CheckBid(in, &in.Bids[i]).Failed() {
				panic("typical bid rejected")
			}
		}
	})
	require.Zero(t, allocs)
}
