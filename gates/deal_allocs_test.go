//go:build !race

package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestDealPassAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	g := &deal{}
	in := &ev.In
	// The typical pair has no pmp: Prepare skips.
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if g.Prepare(in) == "" {
			panic("not skipped")
		}
	}))
	dealTypical(ev)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if g.Prepare(in) != "" {
			panic("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() || v.Skipped() {
				panic(v.Reason)
			}
		}
	}))
}
