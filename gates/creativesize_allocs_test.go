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
}
