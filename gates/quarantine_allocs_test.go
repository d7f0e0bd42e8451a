//go:build !race

package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// Judging and rejecting allocate nothing: the reasons are constants.
func TestQuarantineAllocatesNothing(t *testing.T) {
	g := mustGate(t, "quarantine", "").(engine.BidGate)
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	in := &ev.In
	in.Quarantine = fakeSeatStates{"512": "price", "777": "operator"}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if g.Prepare(in) != "" {
			t.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); !v.Failed() {
				t.Fatal("passed")
			}
		}
	}))
}
