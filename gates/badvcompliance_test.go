package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestBadvCompliance(t *testing.T) {
	g := &badvCompliance{}
	in := &engine.Input{Request: &openrtb2.BidRequest{BAdv: []string{"", " Blocked.COM ", "bücher.de", "other.net."}}}
	require.Empty(t, g.Prepare(in))
	f := func(adomain []string, blocked string) {
		t.Helper()
		v := g.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{ADomain: adomain}})
		if blocked == "" {
			require.False(t, v.Failed(), "%q: %s", adomain, v.Reason)
			return
		}
		require.True(t, v.Failed(), "%q", adomain)
		require.Equal(t, "blocked advertiser domain: "+blocked, v.Reason)
		require.Equal(t, 205, v.Loss)
		require.Equal(t, 356, v.NBR)
	}
	f(nil, "")
	f([]string{"", " "}, "")
	f([]string{"brand.com"}, "")
	f([]string{"notblocked.com", "blocked.com.au", "blocked.co", "xblocked.com"}, "")
	f([]string{"blocked.com"}, "blocked.com")
	f([]string{"ok.com", "ADS.BLOCKED.COM"}, "ads.blocked.com")
	f([]string{"a.b.c.blocked.com"}, "a.b.c.blocked.com")
	f([]string{"xn--bcher-kva.de"}, "xn--bcher-kva.de")
	f([]string{"Shop.BÜCHER.de"}, "shop.xn--bcher-kva.de")
	f([]string{"other.net"}, "other.net")
	f([]string{"blocked.com."}, "blocked.com") // the trailing dot dropped, as compared

	skip := func(badv []string) {
		t.Helper()
		require.Equal(t, "no badv in request", g.Prepare(&engine.Input{Request: &openrtb2.BidRequest{BAdv: badv}}))
	}
	skip(nil)
	skip([]string{})
	skip([]string{"", "\t"})
}

func BenchmarkBadvCompliance(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	g := &badvCompliance{}
	in := &ev.In
	b.ReportAllocs()
	for b.Loop() {
		if g.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if g.CheckBid(in, &in.Bids[i]).Failed() {
				b.Fatal("typical bid rejected")
			}
		}
	}
}
