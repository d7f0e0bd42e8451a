//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBcatCompliancePassAllocatesNothing(t *testing.T) {
	for _, hier := range []bool{true, false} {
		g := newBcatComplianceForTest(t, hier)
		ev := txTypical(t)
		in := &ev.In
		in.Bids[2].CatTax = 7 // a per-bid taxonomy skip allocates nothing either
		require.Zero(t, testing.AllocsPerRun(100, func() {
			if g.Prepare(in) != "" {
				t.Fatal("skipped")
			}
			for i := range in.Bids {
				if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
					t.Fatal(v.Reason)
				}
			}
		}))
	}
}
