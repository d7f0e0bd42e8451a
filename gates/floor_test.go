package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func newFloor(t testing.TB, onMissingRate string) *floor {
	t.Helper()
	g, err := floorFactory.New(&floorOptions{OnMissingRate: missingRate(onMissingRate)}, engine.Env{})
	require.NoError(t, err)
	return g.(*floor)
}

func TestFloor(t *testing.T) {
	rates, err := engine.CompileRates(map[string]float64{"EUR/USD": 1.08})
	require.NoError(t, err)
	g := newFloor(t, "fail")
	req := &openrtb2.BidRequest{Imp: []openrtb2.Imp{
		{ID: "1", BidFloor: 0.5},
		{ID: "2", BidFloor: 1, BidFloorCur: "EUR", PMP: &openrtb2.PMP{Deals: []openrtb2.Deal{
			{ID: "usd", BidFloor: 2},
			{ID: "eur", BidFloor: 2, BidFloorCur: "EUR"},
			{ID: "gbp", BidFloor: 2, BidFloorCur: "GBP"},
			{ID: "none"},
		}}},
		{ID: "3"},
		{ID: "4", BidFloor: 0.5, BidFloorCur: "GBP"},
	}}
	f := func(respCur, impid, dealid string, price float64, reason string, loss, nbr int) {
		t.Helper()
		in := &engine.Input{Request: req, Response: &openrtb2.BidResponse{Cur: respCur}, Rates: rates}
		require.Empty(t, g.Prepare(in))
		v := g.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{ImpID: impid, DealID: dealid, Price: price}, HasPrice: true})
		if reason == "" {
			require.False(t, v.Failed(), "%s %s/%s %v: %s", respCur, impid, dealid, price, v.Reason)
			require.False(t, v.Skipped())
			return
		}
		require.True(t, v.Failed(), "%s %s/%s %v", respCur, impid, dealid, price)
		require.Equal(t, reason, v.Reason)
		require.Equal(t, loss, v.Loss)
		require.Equal(t, nbr, v.NBR)
	}
	f("", "1", "", 0.5, "", 0, 0)
	f("USD", "1", "", 0.51, "", 0, 0)
	f("USD", "1", "", 0.4999996, "", 0, 0) // rounds to 500000 micros: equal
	f("USD", "1", "", 0.4999994, "bid price 0.4999994 below floor 0.5", 100, 301)
	f("USD", "1", "", 0.49, "bid price 0.49 below floor 0.5", 100, 301)
	f("USD", "1", "", -1, "bid price -1 below floor 0.5", 100, 301)
	f("USD", "1", "", 0, "bid price 0 below floor 0.5", 100, 301)
	f("EUR", "1", "", 0.462963, "", 0, 0) // 0.5 / 1.08 = 0.46296296...
	f("EUR", "1", "", 0.462962, "bid price 0.462962 below floor 0.462963", 100, 301)
	f("USD", "2", "", 1.08, "", 0, 0)
	f("USD", "2", "", 1.07, "bid price 1.07 below floor 1.08", 100, 301)
	f("EUR", "2", "", 1, "", 0, 0)
	f("EUR", "2", "", 0.99, "bid price 0.99 below floor 1", 100, 301)
	f("USD", "2", "usd", 2, "", 0, 0)
	f("USD", "2", "usd", 1.99, "bid price 1.99 below deal floor 2", 101, 304)
	f("EUR", "2", "usd", 1.851852, "", 0, 0)
	f("EUR", "2", "usd", 1.85185, "bid price 1.85185 below deal floor 1.851852", 101, 304)
	f("USD", "2", "eur", 2.16, "", 0, 0)
	f("USD", "2", "eur", 2.159999, "bid price 2.159999 below deal floor 2.16", 101, 304)
	f("USD", "2", "gbp", 100, "no rate for USD/GBP", 3, 301)
	f("USD", "2", "none", 1.07, "bid price 1.07 below floor 1.08", 100, 301)
	f("USD", "2", "unknown", 1.07, "bid price 1.07 below floor 1.08", 100, 301)
	f("USD", "3", "", 0, "", 0, 0)
	f("USD", "9", "", 0, "", 0, 0)
	f("USD", "4", "", 100, "no rate for USD/GBP", 3, 301)
	f("JPY", "1", "", 100, "no rate for JPY/USD", 3, 301)
	f("USD", "1", "", 1e300, "", 0, 0)

	// A missing price counts as 0.
	in := &engine.Input{Request: req, Response: &openrtb2.BidResponse{}, Rates: rates}
	v := g.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{ImpID: "1"}})
	require.Equal(t, "bid price 0 below floor 0.5", v.Reason)

	// onMissingRate: pass skips the bid and says why.
	pass := newFloor(t, "pass")
	v = pass.CheckBid(&engine.Input{Request: req, Response: &openrtb2.BidResponse{Cur: "JPY"}}, &engine.Bid{Bid: &openrtb2.Bid{ImpID: "1", Price: 9}, HasPrice: true})
	require.True(t, v.Skipped())
	require.Equal(t, "no rate for JPY/USD", v.Reason)
	require.Equal(t, "rate", v.Details)
	v = pass.CheckBid(&engine.Input{Request: req, Response: &openrtb2.BidResponse{}}, &engine.Bid{Bid: &openrtb2.Bid{ImpID: "1", Price: 0.1}, HasPrice: true})
	require.True(t, v.Failed(), "a floor with a rate is still enforced")
}

func TestFloorPrepare(t *testing.T) {
	g := newFloor(t, "fail")
	in := &engine.Input{Request: &openrtb2.BidRequest{Imp: []openrtb2.Imp{{ID: "1"}, {ID: "2", BidFloor: -1, PMP: &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "d"}}}}}}}
	require.Equal(t, "no bidfloor in request", g.Prepare(in))
	in.Request.Imp[1].PMP.Deals[0].BidFloor = 0.1
	require.Empty(t, g.Prepare(in), "a deal floor counts")
	in.Request.Imp[1].PMP = nil
	in.Request.Imp[0].BidFloor = 0.1
	require.Empty(t, g.Prepare(in))
}

func TestFloorOptions(t *testing.T) {
	require.Equal(t, missingRate("fail"), floorFactory.Options().(*floorOptions).OnMissingRate)
	_, err := floorFactory.New(&floorOptions{OnMissingRate: "skip"}, engine.Env{})
	require.EqualError(t, err, "onMissingRate must be fail or pass")
	_, err = floorFactory.New(&floorOptions{}, engine.Env{})
	require.EqualError(t, err, "onMissingRate must be fail or pass")
}

func BenchmarkFloor(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	g := newFloor(b, "fail")
	in := &ev.In
	b.ReportAllocs()
	for b.Loop() {
		if g.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
				b.Fatal(v.Reason)
			}
		}
	}
}
