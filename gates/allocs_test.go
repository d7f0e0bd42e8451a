//go:build !race

package gates

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

// allocWant is what judging a row's pair must give.
type allocWant uint8

const (
	wantPass   allocWant = iota // nothing fails, nothing is skipped
	wantSkip                    // Prepare (or CheckResponse) skips the pair
	wantReject                  // every bid is rejected (the reason is prebuilt)
)

// allocRow is one scenario of a registered gate judged without allocating:
// the gate built by its factory from options, the typical pair (or pair),
// changed by setup, judged as the engine judges its kind.
type allocRow struct {
	gate    string // factory name
	name    string // the scenario, when a gate has several
	options string // YAML options ("" for the defaults)
	// pair is the Input judged (nil: the typical pair, testdata/typical-*.json).
	pair  func(t *testing.T) *engine.Input
	setup func(in *engine.Input)
	want  allocWant
	// bidSkips: some bids of the pair are skipped by the gate (SkipBid).
	bidSkips bool
	// allocates: the gate is known to allocate; the count is logged and
	// must stay positive so that gates/README.md is updated if it changes.
	allocates bool
	// extra measures further paths of the gate (rejections, every creative
	// kind); each must allocate nothing.
	extra func(t *testing.T, g engine.Gate)
}

// allocRows holds at least one row per registered gate
// (TestAllocsTableCoversRegistry); keep it sorted by gate.
var allocRows = []allocRow{
	{gate: "adomainVerify", options: "{requireAdomain: true, extraPlaceholders: [agency.io]}"},

	{gate: "audienceSafety", name: "coppa", options: "{childCategories: [IAB9-7]}", pair: audienceSafetyPair},
	{gate: "audienceSafety", name: "regs.ext.coppa", options: "{childCategories: [IAB9-7]}", pair: audienceSafetyPair,
		setup: func(in *engine.Input) {
			in.Request.Regs = &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":0,"coppa":1}`)}
		}},
	{gate: "audienceSafety", name: "child category", options: "{childCategories: [IAB9-7]}", pair: audienceSafetyPair,
		setup: func(in *engine.Input) {
			in.Request.Regs = nil
			in.Request.Site.Cat = []string{"IAB1", "iab9-7-2"}
		}},
	{gate: "audienceSafety", name: "bundle keyword", options: "{childCategories: [IAB9-7]}", pair: audienceSafetyPair,
		setup: func(in *engine.Input) {
			in.Request.Regs, in.Request.Site = nil, nil
			in.Request.App = &openrtb2.App{Bundle: "com.acme.BabyShark"}
		}},
	{gate: "audienceSafety", name: "not child-directed", options: "{childCategories: [IAB9-7]}", pair: audienceSafetyPair,
		setup: func(in *engine.Input) {
			in.Request.Regs, in.Request.Site = nil, nil
			in.Request.App = &openrtb2.App{Bundle: "com.acme.news", Cat: []string{"IAB12"}}
		}, want: wantSkip},

	// Upper-case and padded ASCII entries are normalised without allocating.
	{gate: "badvCompliance", setup: func(in *engine.Input) {
		in.Request.BAdv = append(in.Request.BAdv, " Other-Blocked.COM ", "x.brand-one.com")
	}},
	{gate: "bappCompliance", pair: func(t *testing.T) *engine.Input { return bappInput(t) }},
	{gate: "battrCompliance"},

	// A per-bid taxonomy skip allocates nothing either.
	{gate: "bcatCompliance", name: "hierarchical", options: "{hierarchical: true}", bidSkips: true,
		setup: func(in *engine.Input) { in.Bids[2].CatTax = 7 }},
	{gate: "bcatCompliance", name: "exact", options: "{hierarchical: false}", bidSkips: true,
		setup: func(in *engine.Input) { in.Bids[2].CatTax = 7 }},

	// A converted floor, codes in any case.
	{gate: "bidSanity", options: "{maxPrice: 100}", setup: func(in *engine.Input) {
		in.Rates = eurRates
		in.Request.Imp[1].BidFloorCur = "eur"
		in.Response.Cur = "usd"
	}},

	{gate: "content"},

	// Bid 3 is not a banner bid: skipped.
	{gate: "creativeSize", bidSkips: true},
	// A bid without a size on an imp offering exactly one fixed size.
	{gate: "creativeSize", name: "size from the imp", bidSkips: true, setup: func(in *engine.Input) { in.Bids[1].W, in.Bids[1].H = 0, 0 }},

	{gate: "currency"},
	{gate: "currency", name: "codes in any case", setup: func(in *engine.Input) { in.Response.Cur = "usd" }},

	// The typical pair has no pmp: Prepare skips.
	{gate: "deal", name: "no pmp", want: wantSkip},
	{gate: "deal", name: "deals", pair: func(t *testing.T) *engine.Input {
		ev := txTypical(t)
		dealTypical(ev)
		return &ev.In
	}},

	{gate: "dsa", name: "no dsa", want: wantSkip},
	{gate: "dsa", name: "regs.ext.dsa", pair: func(t *testing.T) *engine.Input { return dsaPair(t, "ext") }},
	{gate: "dsa", name: "regs.dsa", pair: func(t *testing.T) *engine.Input { return dsaPair(t, "regs") }},

	{gate: "filesystem"},

	// A converted floor and a deal floor.
	{gate: "floor", options: "{onMissingRate: fail}", setup: func(in *engine.Input) {
		in.Rates = eurRates
		in.Request.Imp[1].BidFloorCur = "EUR"
		in.Request.Imp[2].PMP = &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "d3", BidFloor: 4, BidFloorCur: "EUR"}}}
		in.Bids[2].DealID = "d3"
	}},

	{gate: "impidMatch"},

	{gate: "latency", options: "{maxMs: 200}", setup: func(in *engine.Input) { in.LatencyMs, in.LatencyKnown = 150.5, true }},
	{gate: "latency", name: "unknown", options: "{maxMs: 200}", want: wantSkip},

	{gate: "markupSafety", options: `{extraPatterns: ["coinhive"]}`, extra: func(t *testing.T, g engine.Gate) {
		m := g.(*markupSafety)
		// Every creative kind and rejections, judged again: the warm-up run
		// reads each into the verdict cache, later ones hit it.
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
	}},

	{gate: "mediaType", options: "{requireMtype: true}"},

	{gate: "pii"},

	// Judging and rejecting allocate nothing: the reasons are constants.
	// No pod in the typical pair; the 20-bid pod pair through CheckBid
	// (Passed is empty outside the engine) and through the engine, where
	// every bid is compared with the kept bids before it.
	{gate: "podCompliance", name: "no pod", want: wantSkip},
	{gate: "podCompliance", name: "20-bid pod", options: "{podFit: all, exclusive: [adomain, cat]}",
		pair: func(t *testing.T) *engine.Input { return &ctvPodPair(t).In },
		extra: func(t *testing.T, _ engine.Gate) {
			ev := ctvPodPair(t)
			ev.SetDeadline(time.Now(), time.Now().Add(time.Hour))
			snap := ctvSnapshot(t)
			require.Zero(t, testing.AllocsPerRun(50, func() {
				if !ev.Run(snap, engine.RunOptions{}).Passed() {
					t.Fatal("rejected")
				}
			}))
		}},

	{gate: "quarantine", want: wantReject, setup: func(in *engine.Input) {
		in.Quarantine = fakeSeatStates{"512": "price", "777": "operator"}
	}},

	{gate: "requiredFields"},
	{gate: "responseId"},

	// The validator library decodes the document into map[string]any on
	// every call; the number is reported in gates/README.md.
	{gate: "schema", options: "{file: testdata/schema/schemas/response.json}", allocates: true},

	{gate: "seatPolicy", options: seatRulesTypical, extra: func(t *testing.T, g engine.Gate) {
		// Folding cat and bundle happens on the stack; rejections are prebuilt.
		b := &engine.Bid{Bid: &openrtb2.Bid{ADomain: []string{"brand-one.com"}, CrID: "cr-1", Cat: []string{"iab25-3"}, Bundle: "COM.Blocked.App"}}
		sp := g.(*seatPolicy)
		require.Zero(t, testing.AllocsPerRun(100, func() {
			if !sp.CheckBid(nil, b).Failed() {
				t.Fatal("passed")
			}
		}))
	}},

	{gate: "secureMarkup", extra: func(t *testing.T, _ engine.Gate) {
		// Every creative kind read again (a cache hit: the warm-up run
		// reads it); and a rejection, whose reason is built once.
		mr := newMarkupReader(1024) // its valve stays on for these 700 lookups
		version := markupCacheVersion(0, markup.DefaultLimits)
		for _, adm := range []string{bannerHTML, vast2, vast3Wrapper, vast4, native11, native12, `<img src="http://x">`} {
			b := []byte(adm)
			require.Zero(t, testing.AllocsPerRun(100, func() { mr.read(b, 0, markup.DefaultLimits, version) }), adm)
		}
		require.False(t, mr.valve.off.Load())
		// The valve off: the plain creatives most bids carry (markup's
		// TestReadAllocs) read again, in the reading their imp names; and
		// the bid memo's answer for the second gate.
		mr.valve.off.Store(true)
		for _, c := range []struct {
			adm string
			r   markup.Reading
		}{{distinctBanner, markup.HTML}, {distinctVAST, markup.VAST}, {distinctNative, markup.Native}} {
			b := []byte(c.adm)
			v := markupCacheVersion(c.r, markup.DefaultLimits)
			require.Zero(t, testing.AllocsPerRun(100, func() { mr.read(b, c.r, markup.DefaultLimits, v) }), c.adm)
			var m engine.Memo
			require.Zero(t, testing.AllocsPerRun(100, func() { readMarkup(&m, b, c.r, markup.DefaultLimits) }), c.adm)
		}
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = secureMarkupReject(4) }))
	}},

	{gate: "tmaxGuard", setup: func(in *engine.Input) { in.Deadline = time.Now().Add(time.Hour) }},

	{gate: "uniqueBidId"},

	// The typical pair's video bid (VAST 4.0 inline: code 7 allowed), the
	// banner bids skipped; the 20-bid pod pair, every bid read as VAST.
	{gate: "videoCompliance", bidSkips: true, setup: func(in *engine.Input) {
		in.Request.Imp[2].Video.Protocols = append(in.Request.Imp[2].Video.Protocols, 7)
	}},
	{gate: "videoCompliance", name: "20-bid pod", options: "{requireDuration: true}",
		pair: func(t *testing.T) *engine.Input { return &ctvPodPair(t).In }},

	{gate: "urlSafety", extra: func(t *testing.T, g engine.Gate) {
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
	}},
}

var eurRates = func() *engine.Rates {
	r, err := engine.CompileRates(map[string]float64{"EUR/USD": 1.08})
	if err != nil {
		panic(err)
	}
	return r
}()

func dsaPair(t *testing.T, where string) *engine.Input {
	req, resp := dsaTypical(t, where)
	return mediaEval(t, req, resp)
}

func audienceSafetyPair(t *testing.T) *engine.Input { return audienceSafetyInput(t) }

// TestGatesPassAllocatesNothing judges every row's pair with its gate and
// requires no allocation (schema excepted, measured).
func TestGatesPassAllocatesNothing(t *testing.T) {
	for _, row := range allocRows {
		name := row.gate
		if row.name != "" {
			name += "/" + row.name
		}
		t.Run(name, func(t *testing.T) {
			g := mustGate(t, row.gate, row.options)
			var in *engine.Input
			if row.pair != nil {
				in = row.pair(t)
			} else {
				in = &txTypical(t).In
			}
			if row.setup != nil {
				row.setup(in)
			}
			allocs := testing.AllocsPerRun(100, judgeOnce(t, g, in, row))
			if row.allocates {
				t.Logf("%s: %.0f allocations per judged pair", row.gate, allocs)
				require.Positive(t, allocs, "the gate allocates; if this changes, update gates/README.md")
			} else {
				require.Zero(t, allocs)
			}
			if row.extra != nil {
				row.extra(t, g)
			}
		})
	}
}

// judgeOnce returns one judgement of the pair as the engine makes it for the
// gate's kind, checking the verdicts against row.want.
func judgeOnce(t *testing.T, g engine.Gate, in *engine.Input, row allocRow) func() {
	switch g.Kind() {
	case engine.PerBid:
		bg := g.(engine.BidGate)
		return func() {
			skip := bg.Prepare(in)
			if (skip != "") != (row.want == wantSkip) {
				t.Fatalf("Prepare: skip %q", skip)
			}
			if skip != "" {
				return
			}
			for i := range in.Bids {
				v := bg.CheckBid(in, &in.Bids[i])
				if v.Failed() != (row.want == wantReject) || (v.Skipped() && !row.bidSkips) {
					t.Fatalf("bid %d: %+v", i, v)
				}
			}
		}
	case engine.Response:
		rg := g.(engine.ResponseGate)
		return func() {
			v := rg.CheckResponse(in)
			if v.Failed() != (row.want == wantReject) || v.Skipped() != (row.want == wantSkip) {
				t.Fatalf("%+v", v)
			}
		}
	case engine.Scan:
		sg := g.(interface {
			scan(*engine.Input, scanScope)
		})
		sc := newFakeScope(in)
		return func() {
			sg.scan(in, sc)
			if (sc.hits > 0) != (row.want == wantReject) {
				t.Fatalf("%d hits", sc.hits)
			}
		}
	case engine.Guard:
		dg := g.(engine.DeadlineGate)
		return func() {
			if v := dg.CheckDeadline(in); v.Expired() {
				t.Fatal(v.Reason)
			}
		}
	}
	t.Fatalf("gate %s: unknown kind %v", row.gate, g.Kind())
	return nil
}

// rowlessGates lists the gates of the registry without a row, and the rows
// naming no registered gate.
func rowlessGates(reg engine.Registry, rows []allocRow) []string {
	has := map[string]bool{}
	var out []string
	for _, r := range rows {
		has[r.gate] = true
		if _, ok := reg[r.gate]; !ok {
			out = append(out, r.gate+" (not registered)")
		}
	}
	for name := range reg {
		if !has[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestAllocsTableCoversRegistry: a new gate cannot forget its row, and the
// check sees a missing one.
func TestAllocsTableCoversRegistry(t *testing.T) {
	reg := Builtin()
	require.Empty(t, rowlessGates(reg, allocRows), "add a row to allocRows")

	reg["newGate"] = engine.Factory{Name: "newGate"}
	require.Equal(t, []string{"newGate"}, rowlessGates(reg, allocRows))
	require.Equal(t, []string{"gone (not registered)", "newGate"}, rowlessGates(reg, append(allocRows[:len(allocRows):len(allocRows)], allocRow{gate: "gone"})))
}

// TestMatchingAllocatesNothing covers the shared matching of domains and
// categories on its own, beyond what the gates' rows reach.
func TestMatchingAllocatesNothing(t *testing.T) {
	set := newDomainSet(defaultPlaceholders, reservedTLDs)
	list := []string{"Blocked.COM", " other.net ", "a.b.c.d.e.org"}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		d, ok := normalizeDomain("  shop.brand-one.com ")
		if !ok || !isHostname(d) {
			panic("not a hostname")
		}
		if _, hit := set.match(d); hit {
			panic("placeholder")
		}
		if listCovers(list, d) {
			panic("covered")
		}
	}), "domains")

	s10, _ := newCatSet("x", taxContent10, []string{"IAB25", "IAB7-39"})
	s8, _ := newCatSet("x", taxAdProduct20, []string{"1001-1007"})
	s7, _ := newCatSet("x", taxContent30, []string{"v9i3On"})
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = s10.has("iab7-39-2") || s10.has("IAB12") || s8.has("1003") || s8.has("x") || s7.has("v9i3On") || s7.has("V9I3ON")
		_ = sameCategory(taxContent30, "Rm3SiT", "rm3sit", true)
		_ = content10Covers("IAB25", "iab25-3")
		_ = s10.has("iab25-0123456789012345678901234567890123456789012345678901234567890123456789")
	}), "categories")
}
