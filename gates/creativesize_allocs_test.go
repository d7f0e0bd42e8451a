//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCreativeSizePassAllocatesNothing(t *testing.T) {
	in := mediaTypical(t)
	g := &creativeSize{}
	allocs := testing.AllocsPerRun(100, func() {
		if g.Prepare(in) != "" {
			t.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
				t.Fatal(v.Reason)
			}
		}
	})
	require.Zero(t, allocs)

	// A bid without a size on an imp offering exactly one fixed size.
	in.Bids[1].W, in.Bids[1].H = 0, 0
	allocs = testing.AllocsPerRun(100, func() {
		if v := g.CheckBid(in, &in.Bids[1]); v.Failed() {
			t.Fatal(v.Reason)
		}
	})
	require.Zero(t, allocs)
}
