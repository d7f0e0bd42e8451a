//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBattrCompliancePassAllocatesNothing(t *testing.T) {
	in := mediaTypical(t)
	g := &battrCompliance{}
	allocs := testing.AllocsPerRun(100, func() {
		if g.Prepare(in) != "" {
			t.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() || v.Skipped() {
				t.Fatal(v.Reason)
			}
		}
	})
	require.Zero(t, allocs)
}
