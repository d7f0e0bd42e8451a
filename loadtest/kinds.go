package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// A kind is one way to break one rule of one gate of bidguard
// (docs/gates.md): of the default policy, or, for a pending kind, of a gate
// a config must add. Each bad bid is a valid bid with exactly one change,
// so under failFast the gate meant to reject it is the first that does:
// TestKindsAgainstCheck proves it with `bidguard check`, and for the video
// and pod kinds TestVideoKindsAgainstCheck, with both gates added after
// the default policy (and TestVideoKindsAreBad with a reading of the
// rules). A response-level kind breaks the response as a whole: every bid
// in it is tagged with the kind and counted against the kind's gate
// (bidguard counts a response-level rejection once per bid).
type kind struct {
	name     string // the tag is "bad-" + name
	gate     string // result name of the gate meant to reject it
	response bool   // response-level: applies to the whole answer
	// pending kinds test gates that are not in the embedded default
	// policy yet; "-kinds default" leaves them out, "-kinds all" includes
	// them. Make them default when their gate joins configs/bidguard.yaml.
	pending bool
	// applies reports whether the request and imp allow this kind (a floor
	// kind needs a floor; imp is nil for a response-level kind). apply
	// changes a valid bid into a bad one; applyResp, set instead of apply
	// for a response-level kind, changes the response.
	applies   func(r *reqInfo, imp *impInfo) bool
	apply     func(r *reqInfo, imp *impInfo, b *bidSpec)
	applyResp func(r *reqInfo, s *respSpec)
	// needs names the gate option under which the kind is bad ("" for
	// the gate's defaults): a run counting it needs a config that sets it.
	needs string
	// pod, instead of apply, makes the bid bad against the valid bids the
	// builder has already written for its dynamic pod (build.go).
	pod podAction
	tag string // "bad-" + name
}

// podAction is how a pod kind is built against the pod's earlier bids.
type podAction uint8

const (
	podNone        podAction = iota
	podOverfill              // valid bids until the pod is full, then one more
	podShareDomain           // a bid sharing the adomain of an earlier bid of the pod
	podShareCat              // a bid sharing the category of an earlier bid of the pod
)

func init() {
	kinds = append(kinds, videoKinds...)
	for _, k := range kinds {
		k.tag = tagBad + k.name
	}
}

func always(*reqInfo, *impInfo) bool { return true }

// kinds is every bad-bid kind, in the order of the default policy's
// gates, then the video and pod kinds (ctv.go).
var kinds = []*kind{
	{name: "wrong-id", gate: "rtb.response-id", response: true, applies: always,
		applyResp: func(_ *reqInfo, s *respSpec) { s.wrongID = true }},
	{name: "wrong-currency", gate: "rtb.currency", response: true,
		applies:   func(r *reqInfo, _ *impInfo) bool { return len(r.cur) > 0 },
		applyResp: func(r *reqInfo, s *respSpec) { s.cur = otherCurrency(r.cur) }},
	{name: "impid", gate: "rtb.impid-match", applies: always,
		apply: func(r *reqInfo, _ *impInfo, b *bidSpec) { b.impid = unknownImpID(r) }},
	{name: "no-impid", gate: "rtb.impid-match", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.impid = nil }},
	{name: "no-id", gate: "rtb.required-fields", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.noID = true }},
	{name: "no-crid", gate: "rtb.required-fields", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.noCrid = true }},
	{name: "no-markup", gate: "rtb.required-fields", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.noMarkup = true }},
	{name: "dup-id", gate: "rtb.unique-bid-id", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.dupOf = true }},
	{name: "no-price", gate: "rtb.bid-sanity", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.noPrice = true }},
	{name: "negative-price", gate: "rtb.bid-sanity", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.price = -1 }},
	{name: "floor-multiple", gate: "rtb.bid-sanity", applies: hasFloor,
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.price = imp.floor * 60 }},
	{name: "below-floor", gate: "rtb.floor", applies: hasFloor,
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.price = imp.floor / 2 }},
	{name: "unknown-deal", gate: "rtb.deal", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.dealid = "loadtest-no-such-deal" }},
	{name: "no-adomain", gate: "rtb.adomain-verify", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.adomain = nil }},
	{name: "placeholder-adomain", gate: "rtb.adomain-verify", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.adomain = []byte("example.com") }},
	{name: "adomain-format", gate: "rtb.adomain-verify", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) {
			b.adomain = append(append([]byte("https://"), b.adomain...), "/landing"...)
		}},
	{name: "badv", gate: "rtb.badv-compliance",
		applies: func(r *reqInfo, _ *impInfo) bool { return blockableDomain(r.badv) != "" },
		apply:   func(r *reqInfo, _ *impInfo, b *bidSpec) { b.adomain = []byte(blockableDomain(r.badv)) }},
	{name: "bapp", gate: "rtb.bapp-compliance",
		applies: func(r *reqInfo, _ *impInfo) bool { return len(r.bapp) > 0 },
		apply:   func(r *reqInfo, _ *impInfo, b *bidSpec) { b.bundle = string(r.bapp[0]) }},
	{name: "bcat", gate: "rtb.bcat-compliance",
		applies: func(r *reqInfo, _ *impInfo) bool { return len(r.bcat) > 0 },
		apply: func(r *reqInfo, _ *impInfo, b *bidSpec) {
			b.cat, b.cattax = string(r.bcat[0]), r.cattax
		}},
	{name: "battr", gate: "rtb.battr-compliance",
		applies: func(_ *reqInfo, imp *impInfo) bool { return len(imp.battr[imp.media()]) > 0 },
		apply:   func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.attr = imp.battr[imp.media()][0] }},
	{name: "child-unsafe", gate: "rtb.audience-safety",
		applies: func(r *reqInfo, imp *impInfo) bool { c, a := unsafeFor(r, imp); return r.coppa && (c != "" || a != 0) },
		apply: func(r *reqInfo, imp *impInfo, b *bidSpec) {
			if c, a := unsafeFor(r, imp); c != "" {
				b.cat, b.cattax = c, 1
			} else {
				b.attr = a
			}
		}},
	{name: "creative-size", gate: "rtb.creative-size",
		applies: func(_ *reqInfo, imp *impInfo) bool { return imp.media() == mtBanner && imp.bw > 0 },
		apply:   func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.w, b.h = imp.bw+1, imp.bh+1 }},
	{name: "media-type", gate: "rtb.media-type", applies: always,
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.mtype = unofferedMedia(imp) }},
	{name: "insecure-url", gate: "rtb.secure-markup",
		applies: func(_ *reqInfo, imp *impInfo) bool { return imp.secure },
		apply:   func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.insecure = true }},
	{name: "dsa-missing", gate: "rtb.dsa",
		applies: func(r *reqInfo, _ *impInfo) bool { return r.dsa },
		apply:   func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.dsa = dsaNone }},
	{name: "dsa-invalid", gate: "rtb.dsa",
		applies: func(r *reqInfo, _ *impInfo) bool { return r.dsa },
		apply:   func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.dsa = dsaTooLong }},
	{name: "private-nurl", gate: "rtb.url-safety", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.privateNurl = true }},
	{name: "forced-redirect", gate: "rtb.markup-safety", applies: always,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.redirect = true }},
}

func hasFloor(_ *reqInfo, imp *impInfo) bool { return imp.floor > 0 }

// selectKinds resolves -kinds: "default" (every kind whose gate is in the
// embedded default policy), "all", or a comma-separated list of names.
func selectKinds(spec string) ([]*kind, error) {
	var out []*kind
	switch spec {
	case "default", "":
		for _, k := range kinds {
			if !k.pending {
				out = append(out, k)
			}
		}
		return out, nil
	case "all":
		return slices.Clone(kinds), nil
	}
	for _, name := range strings.Split(spec, ",") {
		i := slices.IndexFunc(kinds, func(k *kind) bool { return k.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("unknown kind %q (loadtest bidder -list-kinds lists them)", name)
		}
		out = append(out, kinds[i])
	}
	return out, nil
}

// otherCurrency returns a currency code absent from cur.
func otherCurrency(cur [][]byte) string {
	for _, c := range []string{"EUR", "GBP", "JPY", "CHF"} {
		if !slices.ContainsFunc(cur, func(b []byte) bool { return strings.EqualFold(string(trimSpace(b)), c) }) {
			return c
		}
	}
	return "XTS" // the ISO 4217 code reserved for testing
}

// unknownImpID returns an imp id the request does not have.
func unknownImpID(r *reqInfo) []byte {
	id := []byte("loadtest-no-such-imp")
	for slices.ContainsFunc(r.imps, func(imp impInfo) bool { return bytes.Equal(imp.id, id) }) {
		id = append(id, 'x')
	}
	return id
}

// unofferedMedia returns a media type the imp does not offer, banner last
// (an mtype 1 bid on an imp that declares no banner size would be judged by
// creativeSize first), and 9, unknown to OpenRTB, when it offers all four.
func unofferedMedia(imp *impInfo) int {
	for _, mt := range [...]int{mtAudio, mtNative, mtVideo, mtBanner} {
		if !imp.offers[mt] {
			return mt
		}
	}
	return 9
}

// childUnsafe is audienceSafety's default unsafe set for Content Taxonomy
// 1.0 (docs/gates.md), in the order tried.
var childUnsafe = []string{"IAB25", "IAB26", "IAB7-39", "IAB7-42", "IAB8-5", "IAB8-18", "IAB9-9", "IAB14-1"}

// unsafeFor returns a category from childUnsafe that bcatCompliance lets
// through, or else an unsafe attribute (8 pop, 9 provocative) that
// battrCompliance lets through; both empty when neither exists.
func unsafeFor(r *reqInfo, imp *impInfo) (cat string, attr int) {
	for _, c := range childUnsafe {
		if !catBlocked(r, c) {
			return c, 0
		}
	}
	for _, a := range []int{8, 9} {
		if !slices.Contains(imp.battr[imp.media()], a) {
			return "", a
		}
	}
	return "", 0
}

// catBlocked reports whether bcatCompliance would block cat (taxonomy 1):
// a bcat entry equal to it or a Content 1.0 parent of it, case-insensitive,
// when the request's bcat is in taxonomy 1.
func catBlocked(r *reqInfo, cat string) bool {
	if r.cattax != 0 && r.cattax != 1 {
		return false
	}
	for _, b := range r.bcat {
		s := string(trimSpace(b))
		if strings.EqualFold(cat, s) || (len(cat) > len(s) && cat[len(s)] == '-' && strings.EqualFold(cat[:len(s)], s)) {
			return true
		}
	}
	return false
}

// normDomain lower-cases d and drops one trailing dot.
func normDomain(d []byte) string {
	return strings.TrimSuffix(strings.ToLower(string(trimSpace(d))), ".")
}

// domainBlocked reports whether badvCompliance blocks d: a badv entry equal
// to it or a parent domain of it.
func domainBlocked(d string, badv [][]byte) bool {
	for _, b := range badv {
		e := normDomain(b)
		if e != "" && (d == e || strings.HasSuffix(d, "."+e)) {
			return true
		}
	}
	return false
}

// blockableDomain returns the first badv entry that adomainVerify accepts
// (a plain hostname that is no placeholder), so a bid naming it fails
// badvCompliance and nothing earlier.
func blockableDomain(badv [][]byte) string {
	for _, b := range badv {
		if d := normDomain(b); isPlainHostname(d) && !isPlaceholder(d) {
			return d
		}
	}
	return ""
}

// isPlainHostname: 2+ labels of [a-z0-9-], 1-63 bytes, no leading or
// trailing '-', the last label letters only (punycode TLDs are not needed
// here, so they count as not plain).
func isPlainHostname(d string) bool {
	labels := strings.Split(d, ".")
	if len(labels) < 2 || len(d) > 253 {
		return false
	}
	for i, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			letter := c >= 'a' && c <= 'z'
			if !letter && (i == len(labels)-1 || !(c >= '0' && c <= '9' || c == '-')) {
				return false
			}
		}
	}
	return true
}

// placeholders are adomainVerify's built-in placeholder domains and
// reserved TLDs (docs/gates.md).
var (
	placeholders = []string{"advertiserdomain.com", "example.com", "example.org", "example.net", "test.com", "placeholder.com", "localhost", "foo.com", "bar.com"}
	reservedTLDs = []string{"example", "test", "invalid", "localhost"}
)

func isPlaceholder(d string) bool {
	for _, p := range placeholders {
		if d == p || strings.HasSuffix(d, "."+p) {
			return true
		}
	}
	tld := d[strings.LastIndexByte(d, '.')+1:]
	return slices.Contains(reservedTLDs, tld)
}
