//go:build !race

package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestFloorPassAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	rates, err := engine.CompileRates(map[string]float64{"EUR/USD": 1.08})
	require.NoError(t, err)
	g := newFloor(t, "fail")
	in := &ev.In
	in.Rates = rates
	// A converted floor and a deal floor are judged without allocating too.
	in.Request.Imp[1].BidFloorCur = "EUR"
	in.Request.Imp[2].PMP = &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "d3", BidFloor: 4, BidFloorCur: "EUR"}}}
	in.Bids[2].DealID = "d3"
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
