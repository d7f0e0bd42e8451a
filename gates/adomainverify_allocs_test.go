//go:build !race

package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestAdomainVerifyPassAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	g := newAdomainVerify(t, adomainVerifyOptions{RequireAdomain: true, ExtraPlaceholders: []string{"agency.io"}})
	in := &ev.In
	allocs := testing.AllocsPerRun(100, func() {
		g.Prepare(in)
		for i := range in.Bids {
			if g.CheckBid(in, &in.Bids[i]).Failed() {
				panic("typical bid rejected")
			}
		}
	})
	require.Zero(t, allocs)
}
