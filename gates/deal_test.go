package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestDeal(t *testing.T) {
	g := &deal{}
	in := &engine.Input{Request: &openrtb2.BidRequest{Imp: []openrtb2.Imp{
		{ID: "1", PMP: &openrtb2.PMP{Deals: []openrtb2.Deal{
			{ID: "d1"},
			{ID: "d2", WSeat: []string{"777"}},
			{ID: "d3", WADomain: []string{" Brand.COM ", "bücher.de"}},
			{ID: "d4", WSeat: []string{"512"}, WADomain: []string{"brand.com"}},
		}}},
		{ID: "2"},
		{ID: "3", PMP: &openrtb2.PMP{PrivateAuction: 1, Deals: []openrtb2.Deal{{ID: "p1"}}}},
	}}}
	require.Empty(t, g.Prepare(in))
	f := func(impid, dealid, seat string, adomain []string, reason string, loss int) {
		t.Helper()
		v := g.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{ImpID: impid, DealID: dealid, ADomain: adomain}, Seat: seat})
		if reason == "" {
			require.False(t, v.Failed(), "%s/%s: %s", impid, dealid, v.Reason)
			require.False(t, v.Skipped(), "%s/%s: %s", impid, dealid, v.Reason)
			return
		}
		require.True(t, v.Failed(), "%s/%s", impid, dealid)
		require.Equal(t, reason, v.Reason)
		require.Equal(t, loss, v.Loss)
		require.Equal(t, 300, v.NBR)
	}
	f("1", "", "512", nil, "", 0)
	f("1", "d1", "512", nil, "", 0)
	f("1", "d9", "512", nil, "unknown deal id: d9", 4)
	f("1", "D1", "512", nil, "unknown deal id: D1", 4)
	f("2", "d1", "512", nil, "unknown deal id: d1", 4)
	f("9", "d1", "512", nil, "unknown deal id: d1", 4)
	f("1", "p1", "512", nil, "unknown deal id: p1", 4)
	f("3", "", "512", nil, "private auction requires a deal", 213)
	f("3", "p1", "512", nil, "", 0)
	f("1", "d2", "512", nil, "seat not allowed in deal", 104)
	f("1", "d2", "", nil, "seat not allowed in deal", 104)
	f("1", "d2", "777", nil, "", 0)
	f("1", "d3", "512", []string{"brand.com"}, "", 0)
	f("1", "d3", "512", []string{"other.com", "Shop.Brand.com"}, "", 0)
	f("1", "d3", "512", []string{"xn--bcher-kva.de"}, "", 0)
	f("1", "d3", "512", []string{"notbrand.com"}, "advertiser not allowed in deal", 213)
	f("1", "d3", "512", nil, "advertiser not allowed in deal", 213)
	f("1", "d3", "512", []string{" "}, "advertiser not allowed in deal", 213)
	f("1", "d4", "777", []string{"other.com"}, "seat not allowed in deal", 104)
	f("1", "d4", "512", []string{"other.com"}, "advertiser not allowed in deal", 213)

	for _, impid := range []string{"2", "9"} {
		v := g.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{ImpID: impid}})
		require.True(t, v.Skipped(), impid)
		require.Equal(t, "no pmp in imp", v.Reason)
		require.Equal(t, "no-pmp", v.Details)
	}
}

func TestDealPrepare(t *testing.T) {
	g := &deal{}
	in := &engine.Input{Request: &openrtb2.BidRequest{Imp: []openrtb2.Imp{{ID: "1"}}}}
	require.Equal(t, "no pmp in request", g.Prepare(in))
	in.Bids = []engine.Bid{{Bid: &openrtb2.Bid{ImpID: "1"}}, {Bid: &openrtb2.Bid{ImpID: "1", DealID: "d1"}}}
	require.Empty(t, g.Prepare(in), "a bid naming a deal is judged")
	in.Bids = in.Bids[:1]
	require.Equal(t, "no pmp in request", g.Prepare(in))
	in.Request.Imp[0].PMP = &openrtb2.PMP{}
	require.Empty(t, g.Prepare(in), "an empty pmp is a pmp")
}

// dealTypical adds deals to the typical pair so that every bid is judged and
// passes: b1 names a deal with wseat and wadomain, b2 bids in the open auction
// of a pmp imp, b3 names a deal restricted to its seat and advertiser.
func dealTypical(ev *engine.Eval) {
	imps := ev.In.Request.Imp
	imps[0].PMP = &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "d0"}, {ID: "d1", WSeat: []string{"333", "512"}, WADomain: []string{"Brand-One.com"}}}}
	imps[1].PMP = &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "d2"}}}
	imps[2].PMP = &openrtb2.PMP{PrivateAuction: 1, Deals: []openrtb2.Deal{{ID: "d3", WSeat: []string{"777"}, WADomain: []string{"other.com", "brand-three.com"}}}}
	ev.In.Bids[0].DealID = "d1"
	ev.In.Bids[2].DealID = "d3"
}

func BenchmarkDeal(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	dealTypical(ev)
	g := &deal{}
	in := &ev.In
	b.ReportAllocs()
	for b.Loop() {
		if g.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() || v.Skipped() {
				b.Fatal(v.Reason)
			}
		}
	}
}
