package gates

import (
	"fmt"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestImpidMatchManyImps(t *testing.T) {
	// Above 16 imps the engine indexes them; the verdicts must not change.
	g := mustGate(t, "impidMatch", "").(engine.BidGate)
	req := &openrtb2.BidRequest{ID: "r"}
	for i := range 40 {
		req.Imp = append(req.Imp, openrtb2.Imp{ID: fmt.Sprint(i)})
	}
	in := engine.Input{Request: req}
	require.Empty(t, g.Prepare(&in))
	for _, c := range []struct {
		imp  string
		fail string
	}{{"0", ""}, {"39", ""}, {"40", "bid impid not present in request"}, {"", "bid missing impid"}} {
		v := g.CheckBid(&in, &engine.Bid{Bid: &openrtb2.Bid{ID: "b", ImpID: c.imp}})
		require.Equal(t, c.fail, v.Reason, c.imp)
	}
}

func TestEmptyImpidMatchesNoImp(t *testing.T) {
	// An empty impid matches no imp, even one without an id, in both of
	// ImpByID's paths (a scan up to 16 imps, an index above).
	for _, n := range []int{1, 40} {
		req := &openrtb2.BidRequest{ID: "r"}
		for i := range n {
			req.Imp = append(req.Imp, openrtb2.Imp{ID: fmt.Sprint(i)})
		}
		req.Imp[n-1].ID = ""
		in := engine.Input{Request: req}
		require.Nil(t, in.ImpByID(""), "%d imps", n)
		if n > 1 {
			require.NotNil(t, in.ImpByID("0"))
		}
	}
}

func TestImpidMatchTakesNoOptions(t *testing.T) {
	configError(t, "impidMatch", "{strict: true}", "impidMatch takes no options")
}

func BenchmarkImpidMatch(b *testing.B) { benchBidGate(b, mustGate(b, "impidMatch", "")) }
