//go:build !race

package gates

import (
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

// typicalAllocs counts the allocations of one pass over the typical pair.
func typicalAllocs(t *testing.T, g engine.Gate) float64 {
	t.Helper()
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	bg := g.(engine.BidGate)
	in := &ev.In
	return testing.AllocsPerRun(200, func() {
		if bg.Prepare(in) != "" {
			t.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := bg.CheckBid(in, &in.Bids[i]); v.Failed() {
				t.Fatal(v.Reason)
			}
		}
	})
}

func TestURLSafetyAllocsNothing(t *testing.T) {
	g := mustGate(t, "urlSafety", "")
	require.Zero(t, typicalAllocs(t, g))
	u := g.(*urlSafety)
	// Every host kind, and a rejection, whose reason is built once.
	for _, s := range []string{
		"https://[2001:4860::1]:443/", "https://0x7f.1/", "https://%31%32%37.0.0.1/", "https://localhost./",
		"https://[::ffff:10.0.0.1]/", "http://x.example/", "https://a\\@b/",
	} {
		require.Zero(t, testing.AllocsPerRun(100, func() { u.judge(s) }), s)
	}
	b := &engine.Bid{Bid: &openrtb2.Bid{NURL: "https://127.0.0.1/"}}
	require.Zero(t, testing.AllocsPerRun(100, func() { u.CheckBid(nil, b) }))
}

func TestMarkupSafetyAllocsNothing(t *testing.T) {
	g := mustGate(t, "markupSafety", `{extraPatterns: ["coinhive"]}`)
	require.Zero(t, typicalAllocs(t, g))
	m := g.(*markupSafety)
	// Every creative kind, nested markup decoded into a pooled buffer, and
	// rejections.
	for _, adm := range []string{
		bannerHTML, adServerTag, vast2, vast4, native11, native12, htmlResourceVAST,
		`<iframe srcdoc="&lt;script&gt;var a = 1&lt;/script&gt;"></iframe>`,
		`<script>top.location = u</script>`, `<a href="javascript:x">`, `<script>eval(atob(x))</script>`, `coinhive`,
		"<script>" + strings.Repeat("f(", 500) + strings.Repeat(")", 500) + "</script>", // nesting past the inline stack
	} {
		b := &engine.Bid{Bid: &openrtb2.Bid{AdM: adm}}
		require.Zero(t, testing.AllocsPerRun(100, func() { m.CheckBid(nil, b) }), adm)
	}
	big := &engine.Bid{Bid: &openrtb2.Bid{AdM: strings.Repeat(adServerTag, 8)}}
	require.Zero(t, testing.AllocsPerRun(20, func() { m.CheckBid(nil, big) }))
}

func TestSeatPolicyAllocsNothing(t *testing.T) {
	g := mustGate(t, "seatPolicy", seatRulesTypical)
	require.Zero(t, typicalAllocs(t, g))
	// Folding cat and bundle happens on the stack; rejections are prebuilt.
	b := &engine.Bid{Bid: &openrtb2.Bid{ADomain: []string{"brand-one.com"}, CrID: "cr-1", Cat: []string{"iab25-3"}, Bundle: "COM.Blocked.App"}}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if !g.(*seatPolicy).CheckBid(nil, b).Failed() {
			t.Fatal("passed")
		}
	}))
}
