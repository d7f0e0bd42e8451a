//go:build !race

package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestBidSanityPassAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	rates, err := engine.CompileRates(map[string]float64{"EUR/USD": 1.08})
	require.NoError(t, err)
	g := mustGate(t, "bidSanity", "{maxPrice: 100}").(engine.BidGate)
	in := &ev.In
	in.Rates = rates
	// A converted floor, codes in any case, is judged without allocating.
	in.Request.Imp[1].BidFloorCur = "eur"
	in.Response.Cur = "usd"
	allocs := testing.AllocsPerRun(100, func() {
		if g.Prepare(in) != "" {
			panic("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() || v.Skipped() {
				panic(v.Reason)
			}
		}
	})
	require.Zero(t, allocs)
}
