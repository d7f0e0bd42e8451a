//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDSAPassAllocatesNothing(t *testing.T) {
	g := &dsa{}
	typical := mediaTypical(t)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if g.Prepare(typical) == "" {
			t.Fatal("not skipped")
		}
	}), "skip path")
	for _, where := range []string{"ext", "regs"} {
		req, resp := dsaTypical(t, where)
		in := mediaEval(t, req, resp)
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
		require.Zero(t, allocs, where)
	}
}
