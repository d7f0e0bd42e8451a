package gates

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

// seatVerdict builds seatPolicy from YAML rules and judges one bid; it
// returns "" for a pass, else "<reason> (<loss>/<nbr>)".
func seatVerdict(t *testing.T, g engine.Gate, bid *openrtb2.Bid) string {
	t.Helper()
	v := g.(*seatPolicy).CheckBid(nil, &engine.Bid{Bid: bid})
	if !v.Failed() {
		return ""
	}
	return v.Reason + " (" + strconv.Itoa(v.Loss) + "/" + strconv.Itoa(v.NBR) + ")"
}

func TestSeatPolicyDenyWins(t *testing.T) {
	g := mustGate(t, "seatPolicy", `{rules: [
		{id: allow-brands, action: allow, field: adomain, match: suffix, values: [brand.example, other.example]},
		{id: no-shoes, action: deny, field: adomain, match: exact, values: [shoes.brand.example]},
		{id: no-iab25, action: deny, field: cat, match: regex, values: ["IAB25(-.*)?"]}]}`)
	f := func(bid *openrtb2.Bid, want string) {
		t.Helper()
		require.Equal(t, want, seatVerdict(t, g, bid), "%+v", bid)
	}
	f(&openrtb2.Bid{ADomain: []string{"brand.example"}}, "")
	f(&openrtb2.Bid{ADomain: []string{"www.brand.example", "other.example"}}, "")
	// Allowed by a suffix, denied by an exact rule listed after it: deny wins.
	f(&openrtb2.Bid{ADomain: []string{"shoes.brand.example"}}, "denied by rule no-shoes (205/356)")
	f(&openrtb2.Bid{ADomain: []string{"brand.example", "SHOES.Brand.Example."}}, "denied by rule no-shoes (205/356)")
	// A deny rule of another field hits before any allow rule is read.
	f(&openrtb2.Bid{ADomain: []string{"unknown.example"}, Cat: []string{"IAB1", "iab25-3"}}, "denied by rule no-iab25 (209/357)")
	// Every value must be allowed.
	f(&openrtb2.Bid{ADomain: []string{"brand.example", "evil.example"}}, "not allowed by rule allow-brands (205/356)")
	f(&openrtb2.Bid{ADomain: []string{"notbrand.example"}}, "not allowed by rule allow-brands (205/356)")
	// Missing or blank: fails an allow field without allowMissing.
	f(&openrtb2.Bid{}, "not allowed by rule allow-brands (205/356)")
	f(&openrtb2.Bid{ADomain: []string{" ", ""}}, "not allowed by rule allow-brands (205/356)")
}

func TestSeatPolicyAllowFields(t *testing.T) {
	g := mustGate(t, "seatPolicy", `{rules: [
		{id: deals-a, action: allow, field: dealid, match: exact, values: [deal-a]},
		{id: crids, action: allow, field: crid, match: regex, values: ["cr-[0-9]+"], loss: 8, nbr: 301},
		{id: deals-b, action: allow, field: dealid, match: regex, values: ["deal-b-.*"], allowMissing: true}]}`)
	f := func(bid *openrtb2.Bid, want string) {
		t.Helper()
		require.Equal(t, want, seatVerdict(t, g, bid), "%+v", bid)
	}
	f(&openrtb2.Bid{DealID: "deal-a", CrID: "cr-1"}, "")
	f(&openrtb2.Bid{DealID: "deal-b-7", CrID: "cr-22"}, "")
	// allowMissing on any allow rule of the field lets a bid without it pass.
	f(&openrtb2.Bid{CrID: "cr-1"}, "")
	// The reason names the field's first allow rule; fields in the order of
	// their first allow rule.
	f(&openrtb2.Bid{DealID: "deal-c", CrID: "x"}, "not allowed by rule deals-a (213/300)")
	f(&openrtb2.Bid{DealID: "DEAL-A", CrID: "cr-1"}, "not allowed by rule deals-a (213/300)")
	f(&openrtb2.Bid{DealID: "deal-a", CrID: "cr-1x"}, "not allowed by rule crids (8/301)")
	f(&openrtb2.Bid{DealID: "deal-a"}, "not allowed by rule crids (8/301)")
}

func TestSeatPolicyMatching(t *testing.T) {
	f := func(rule string, bid *openrtb2.Bid, want bool) {
		t.Helper()
		g := mustGate(t, "seatPolicy", `{rules: [{id: r, action: deny, `+rule+`}]}`)
		require.Equal(t, want, seatVerdict(t, g, bid) != "", "%s %+v", rule, bid)
	}
	// Anchoring: a|b is anchored as a group, values are alternatives.
	crid := `field: crid, match: regex, values: ["a|b"]`
	f(crid, &openrtb2.Bid{CrID: "a"}, true)
	f(crid, &openrtb2.Bid{CrID: "b"}, true)
	f(crid, &openrtb2.Bid{CrID: "ab"}, false)
	f(crid, &openrtb2.Bid{CrID: "xa"}, false)
	f(crid, &openrtb2.Bid{CrID: "bx"}, false)
	f(crid, &openrtb2.Bid{CrID: "a\nb"}, false)
	f(`field: crid, match: regex, values: ["a.*z"]`, &openrtb2.Bid{CrID: "a\nz"}, true) // (?s): '.' matches a newline
	// A flag in one value does not leak into the next.
	flags := `field: crid, match: regex, values: ["(?i)abc", "def"]`
	f(flags, &openrtb2.Bid{CrID: "ABC"}, true)
	f(flags, &openrtb2.Bid{CrID: "def"}, true)
	f(flags, &openrtb2.Bid{CrID: "DEF"}, false)
	// adm is unanchored.
	adm := `field: adm, match: regex, values: ["coinhive|cryptonight"]`
	f(adm, &openrtb2.Bid{AdM: `<script src="https://x/cryptonight.js">`}, true)
	f(adm, &openrtb2.Bid{AdM: "<p>\ncoinhive</p>"}, true)
	f(adm, &openrtb2.Bid{AdM: "<p>coin hive</p>"}, false)
	f(`field: adm, match: exact, values: ["<p>x</p>"]`, &openrtb2.Bid{AdM: "<p>x</p>"}, true)
	f(`field: adm, match: exact, values: ["<p>x</p>"]`, &openrtb2.Bid{AdM: "<p>x</p> "}, false)
	// adomain: normalised as adomainVerify does; suffix on a '.' boundary.
	f(`field: adomain, match: exact, values: [Brand.Example]`, &openrtb2.Bid{ADomain: []string{" BRAND.example. "}}, true)
	f(`field: adomain, match: exact, values: [brand.example]`, &openrtb2.Bid{ADomain: []string{"www.brand.example"}}, false)
	f(`field: adomain, match: exact, values: [bücher.example]`, &openrtb2.Bid{ADomain: []string{"xn--bcher-kva.example"}}, true)
	f(`field: adomain, match: suffix, values: [blocked.example]`, &openrtb2.Bid{ADomain: []string{"ads.blocked.example"}}, true)
	f(`field: adomain, match: suffix, values: [blocked.example]`, &openrtb2.Bid{ADomain: []string{"notblocked.example"}}, false)
	f(`field: adomain, match: regex, values: ["[a-z]+\\.example"]`, &openrtb2.Bid{ADomain: []string{"BRAND.example"}}, true)
	// bundle: case-insensitive; suffix on a '.' boundary.
	f(`field: bundle, match: exact, values: [com.Game.App]`, &openrtb2.Bid{Bundle: "COM.game.app"}, true)
	f(`field: bundle, match: suffix, values: [game.app]`, &openrtb2.Bid{Bundle: "com.game.app"}, true)
	f(`field: bundle, match: suffix, values: [game.app]`, &openrtb2.Bid{Bundle: "com.minigame.app"}, false)
	// cat: codes of every taxonomy compare without case (match.go); exact is
	// not hierarchical.
	f(`field: cat, match: exact, values: [IAB25-3]`, &openrtb2.Bid{Cat: []string{"iab25-3"}}, true)
	f(`field: cat, match: exact, values: [IAB25]`, &openrtb2.Bid{Cat: []string{"IAB25-3"}}, false)
	f(`field: cat, match: exact, values: [v9i3On]`, &openrtb2.Bid{Cat: []string{"v9i3On"}, CatTax: adcom1.CategoryTaxonomy(7)}, true)
	f(`field: cat, match: exact, values: [v9i3On]`, &openrtb2.Bid{Cat: []string{"V9I3ON"}, CatTax: adcom1.CategoryTaxonomy(7)}, true)
	f(`field: cat, match: exact, values: [v9i3On]`, &openrtb2.Bid{Cat: []string{"v9i3Onx"}, CatTax: adcom1.CategoryTaxonomy(7)}, false)
	f(`field: cat, match: regex, values: ["IAB7-(39|42)"]`, &openrtb2.Bid{Cat: []string{"iab7-42"}}, true)
	f(`field: cat, match: regex, values: ["IAB7-(39|42)"]`, &openrtb2.Bid{Cat: []string{"IAB7-420"}}, false)
	// crid and dealid compare as sent.
	f(`field: crid, match: exact, values: [Cr-1]`, &openrtb2.Bid{CrID: "cr-1"}, false)
	f(`field: dealid, match: exact, values: [d1]`, &openrtb2.Bid{DealID: "d1"}, true)
	// A missing field never hits a deny rule.
	f(`field: dealid, match: regex, values: [".*"]`, &openrtb2.Bid{}, false)
}

// TestSeatPolicyLargeLists matches 20,000 values through sets.
func TestSeatPolicyLargeLists(t *testing.T) {
	var doms, crids []string
	for i := range 10000 {
		doms = append(doms, "brand"+strconv.Itoa(i)+".example")
		crids = append(crids, "cr-"+strconv.Itoa(i))
	}
	g := mustGate(t, "seatPolicy", `{rules: [
		{id: brands, action: allow, field: adomain, match: suffix, values: [`+strings.Join(doms, ",")+`]},
		{id: crids, action: deny, field: crid, match: exact, values: [`+strings.Join(crids, ",")+`]}]}`)
	require.Equal(t, "", seatVerdict(t, g, &openrtb2.Bid{ADomain: []string{"www.brand9999.example"}, CrID: "cr-10000"}))
	require.Equal(t, "denied by rule crids (200/350)", seatVerdict(t, g, &openrtb2.Bid{ADomain: []string{"brand1.example"}, CrID: "cr-5000"}))
	require.Equal(t, "not allowed by rule brands (205/356)", seatVerdict(t, g, &openrtb2.Bid{ADomain: []string{"brand10000.example"}}))
}

func TestSeatPolicyConfigErrors(t *testing.T) {
	_, err := buildGate(t, "seatPolicy", `{rules: [
		{id: a, action: deny, field: adomain, match: exact, values: [x.example]},
		{id: a, action: block, field: price, match: exact, values: [x]},
		{action: allow, field: crid, match: prefix, values: [x]},
		{id: c, action: deny, field: cat, match: suffix, values: [IAB1], allowMissing: true},
		{id: d, action: allow, field: adomain, match: exact, values: ["", "not a domain"]},
		{id: e, action: allow, field: crid, match: regex, values: ["ok", "a(b"], loss: 0, nbr: -1},
		{id: f, action: allow, field: bundle, match: exact, values: []}]}`)
	require.Error(t, err)
	for _, msg := range []string{
		`rules[1].id: "a" is also the id of rules[0]`,
		`rules[1].action: "block" is not deny or allow`,
		`rules[1].field: "price" is not one of adomain, crid, cat, bundle, dealid, adm`,
		`rules[2].id: missing`,
		`rules[2].match: "prefix" is not exact, suffix or regex`,
		`rules[3].match: suffix applies only to adomain and bundle, not cat`,
		`rules[3].allowMissing: only allow rules accept a missing field`,
		`rules[4].values[0]: empty`,
		`rules[4].values[1] "not a domain" is not a domain name`,
		`rules[5].values[1]: error parsing regexp`,
		`rules[5].loss must be > 0, got 0`,
		`rules[5].nbr must be > 0, got -1`,
		`rules[6].values: at least one value is required`,
	} {
		require.Contains(t, err.Error(), msg)
	}
	configError(t, "seatPolicy", `{rules: []}`, "rules: at least one rule is required")
	configError(t, "seatPolicy", ``, "rules: at least one rule is required")
	configError(t, "seatPolicy", `{rules: [{id: a, action: deny, field: crid, match: exact, values: [x], mode: y}]}`, `unknown option "mode"`)
}

// TestSeatFileExample loads configs/seats/512.yaml through seatsDir and runs
// the typical pair: seat 512's rules apply to its bids only.
func TestSeatFileExample(t *testing.T) {
	name := filepath.Join("..", "configs", "test.yaml")
	text := []byte("seatsDir: seats/\npolicy:\n  gates:\n    - gate: impidMatch\n")
	cfg, err := config.Parse(name, text)
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, name, text, Builtin())
	require.NoError(t, err)
	require.Contains(t, snap.Describe(), "rtb.seat-policy")

	req, err := os.ReadFile(filepath.Join("testdata", "typical-request.json"))
	require.NoError(t, err)
	resp, err := os.ReadFile(filepath.Join("testdata", "typical-response.json"))
	require.NoError(t, err)
	check := func(resp []byte) *engine.Report {
		t.Helper()
		rep, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{LatencyMs: -1, All: true})
		require.NoError(t, err)
		engine.ReleaseEval(ev)
		return rep
	}
	require.True(t, check(resp).Passed)

	bad := strings.Replace(string(resp), `"adomain": ["brand-two.com"]`, `"adomain": ["brand-two.com", "www.casino.example"]`, 1)
	bad = strings.Replace(bad, `"adomain": ["brand-one.com"]`, `"adomain": ["brand-one.com", "brand-four.com"]`, 1)
	bad = strings.Replace(bad, `"adomain": ["brand-three.com"]`, `"adomain": ["casino.example"]`, 1)
	rep := check([]byte(bad))
	require.False(t, rep.Passed)
	require.Len(t, rep.Rejected, 2) // seat 777's bid is not judged by seat 512's rules
	require.Equal(t, "b1", rep.Rejected[0].BidID)
	require.Equal(t, "not allowed by rule known-advertisers", rep.Rejected[0].Reason)
	require.Equal(t, "b2", rep.Rejected[1].BidID)
	require.Equal(t, "denied by rule no-gambling-advertisers", rep.Rejected[1].Reason)
	require.Equal(t, 205, rep.Rejected[1].Loss)
	require.Equal(t, 356, rep.Rejected[1].NBR)
}

func TestSeatPolicyRegistered(t *testing.T) {
	fa, ok := Builtin()["seatPolicy"]
	require.True(t, ok)
	require.Equal(t, "rtb.seat-policy", fa.ResultName)
	require.Equal(t, engine.PerBid, fa.Kind)
}

// seatRulesTypical are rules over every field but adm that the typical pair
// passes.
const seatRulesTypical = `{rules: [
	{id: no-casinos, action: deny, field: adomain, match: suffix, values: [casino.example, bet.example]},
	{id: no-adult, action: deny, field: cat, match: exact, values: [IAB25, IAB25-3, IAB26]},
	{id: brands, action: allow, field: adomain, match: suffix, values: [brand-one.com, brand-two.com, brand-three.com]},
	{id: crids, action: allow, field: crid, match: regex, values: ["cr-[0-9]{4}"]},
	{id: deals, action: allow, field: dealid, match: exact, values: [d1], allowMissing: true},
	{id: bundles, action: deny, field: bundle, match: exact, values: [com.blocked.app]}]}`

func BenchmarkSeatPolicy(b *testing.B) { benchBidGate(b, mustGate(b, "seatPolicy", seatRulesTypical)) }

// BenchmarkSeatPolicyAdmRegex adds an adm regex: RE2 over every creative.
func BenchmarkSeatPolicyAdmRegex(b *testing.B) {
	rules := strings.Replace(seatRulesTypical, `{rules: [`, `{rules: [
	{id: no-miners, action: deny, field: adm, match: regex, values: ["coinhive|cryptonight"]},`, 1)
	benchBidGate(b, mustGate(b, "seatPolicy", rules))
}
