//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBappCompliancePassAllocatesNothing(t *testing.T) {
	g := &bappCompliance{}
	in := bappInput(t)
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
