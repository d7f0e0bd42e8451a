package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestBidSanityOrderAndFormatting(t *testing.T) {
	g := mustGate(t, "bidSanity", "{maxPrice: 30}").(engine.BidGate)
	req := &openrtb2.BidRequest{Imp: []openrtb2.Imp{{ID: "1", BidFloor: 0.5}, {ID: "2", BidFloor: 0.07}}}
	in := engine.Input{Request: req}
	f := func(imp string, price float64, has bool, want string) {
		t.Helper()
		v := g.CheckBid(&in, &engine.Bid{Bid: &openrtb2.Bid{ImpID: imp, Price: price}, HasPrice: has})
		require.Equal(t, want, v.Reason)
	}
	f("1", 0, false, "bid missing price")
	f("1", -1, true, "bid price is negative")
	f("1", 30.5, true, "bid price 30.5 exceeds maxPrice 30")
	f("1", 25, true, "")
	f("1", 25.01, true, "bid price 25.01 is 50.02x the floor 0.5 (max 50x)")
	f("2", 3.6, true, "bid price 3.6 is 51.43x the floor 0.07 (max 50x)")
}

func TestBidSanityOptions(t *testing.T) {
	configError(t, "bidSanity", "{maxFloorMultiple: 0}", "maxFloorMultiple must be > 0")
	configError(t, "bidSanity", "{maxPrice: 0}", "maxPrice must be > 0")
	configError(t, "bidSanity", "{maxPrice: -2, maxFloorMultiple: -1}", "maxPrice must be > 0")
	configError(t, "bidSanity", "{maxprice: 2}", `unknown option "maxprice"`)
}

func BenchmarkBidSanity(b *testing.B) { benchBidGate(b, mustGate(b, "bidSanity", "")) }
