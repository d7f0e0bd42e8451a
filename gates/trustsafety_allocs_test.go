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

// TestMarkupSafetyAllocsNothing covers the checks before the readers (size,
// UTF-8, empty, patterns); gates/markup's tests bound the readers'
// allocations.
func TestMarkupSafetyAllocsNothing(t *testing.T) {
	m := mustGate(t, "markupSafety", `{maxAdmBytes: 64, extraPatterns: ["coinhive"]}`).(*markupSafety)
	for _, b := range []*engine.Bid{
		{Bid: &openrtb2.Bid{AdM: strings.Repeat("x", 65)}},
		{Bid: &openrtb2.Bid{AdM: "<p>x</p>"}, BadUTF8: true},
		{Bid: &openrtb2.Bid{}},
	} {
		require.Zero(t, testing.AllocsPerRun(100, func() { m.CheckBid(nil, b) }), b.AdM)
	}
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
