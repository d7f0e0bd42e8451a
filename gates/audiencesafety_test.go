package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func newAudienceSafetyForTest(t testing.TB, edit func(o *audienceSafetyOptions)) *audienceSafety {
	t.Helper()
	o := audienceSafetyFactory.Options().(*audienceSafetyOptions)
	if edit != nil {
		edit(o)
	}
	g, err := audienceSafetyFactory.New(o, engine.Env{})
	require.NoError(t, err)
	return g.(*audienceSafety)
}

func TestAudienceSafetyChildDirected(t *testing.T) {
	g := newAudienceSafetyForTest(t, func(o *audienceSafetyOptions) {
		o.ChildCategories = []string{"IAB9-7", "kids-id"}
	})
	f := func(req string, want bool) {
		t.Helper()
		ev := txEval(t, req, `{"id":"r","seatbid":[]}`)
		skip := g.Prepare(&ev.In)
		if want {
			require.Empty(t, skip, req)
		} else {
			require.Equal(t, "inventory not child-directed", skip, req)
		}
	}
	f(`{"id":"r","imp":[{"id":"1"}]}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"regs":{"coppa":1}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"regs":{"coppa":0}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"regs":{"ext":{"coppa":1}}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"regs":{"coppa":0,"ext":{"coppa":1}}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"regs":{"ext":{"coppa":0}}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"regs":{"ext":{"coppa":"1"}}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"regs":{"ext":{"gdpr":1}}}`, false)
	// childCategories: Content 1.0 under the C- rule, by the object's cattax.
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"cat":["IAB9-7"]}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"cat":["IAB9-7-1"]}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"cat":["IAB9"]}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"cat":["IAB9-70"]}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"content":{"cat":["IAB9-7"]}}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"cat":["iab9-7"]}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"content":{"cat":["IAB9-7"]}}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"cattax":7,"cat":["kids-id"]}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"cattax":7,"cat":["kids-id-2"]}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"cattax":7,"cat":["IAB9-7-1"]}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"pagecat":["IAB9-7"]}}`, false) // only cat counts
	// bundleKeywords: case-insensitive substrings, false positives included.
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"bundle":"com.acme.KidsGames"}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"bundle":"com.acme.toddler"}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"bundle":"com.babylon.health"}}`, true)
	f(`{"id":"r","imp":[{"id":"1"}],"app":{"bundle":"com.acme.news"}}`, false)
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"domain":"kids.example"}}`, false)
	// IAB13 is Personal Finance in Content 1.0: not child-directed.
	f(`{"id":"r","imp":[{"id":"1"}],"site":{"cat":["IAB13"]}}`, false)

	off := newAudienceSafetyForTest(t, func(o *audienceSafetyOptions) { o.BundleKeywords = nil })
	ev := txEval(t, `{"id":"r","imp":[{"id":"1"}],"app":{"bundle":"com.kids"}}`, `{"id":"r","seatbid":[]}`)
	require.Equal(t, "inventory not child-directed", off.Prepare(&ev.In))
}

func TestAudienceSafetyCheckBid(t *testing.T) {
	const coppa = `{"id":"r","imp":[{"id":"1"}],"regs":{"coppa":1}}`
	f := func(g *audienceSafety, bid, want string, loss, nbr int) {
		t.Helper()
		skip, v := txBid(t, g, coppa, bid)
		require.Empty(t, skip)
		if want == "" {
			require.False(t, v.Failed(), "%s: %s", bid, v.Reason)
			return
		}
		require.True(t, v.Failed(), bid)
		require.Equal(t, want, v.Reason, bid)
		require.Equal(t, loss, v.Loss)
		require.Equal(t, nbr, v.NBR)
	}
	g := newAudienceSafetyForTest(t, nil)
	f(g, `{"id":"b","impid":"1","price":1}`, "", 0, 0)
	f(g, `{"id":"b","impid":"1","price":1,"cat":["IAB1"],"attr":[1,2]}`, "", 0, 0)
	f(g, `{"id":"b","impid":"1","price":1,"cat":["IAB1","IAB25-3"]}`, "child-directed inventory served unsafe category: IAB25-3", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cat":["iab26"]}`, "child-directed inventory served unsafe category: iab26", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cat":["IAB250"]}`, "", 0, 0)
	f(g, `{"id":"b","impid":"1","price":1,"cat":["IAB7-39"]}`, "child-directed inventory served unsafe category: IAB7-39", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cat":["IAB7"]}`, "", 0, 0)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":1,"cat":["IAB14-1"]}`, "child-directed inventory served unsafe category: IAB14-1", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":8,"cat":["1000","1001"]}`, "child-directed inventory served unsafe category: 1001", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":8,"cat":["1007"]}`, "child-directed inventory served unsafe category: 1007", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":8,"cat":["1008"]}`, "", 0, 0)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":8,"cat":["1582"]}`, "child-directed inventory served unsafe category: 1582", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":8,"cat":["1583"]}`, "", 0, 0)
	for _, tax := range []string{"6", "7", "9"} {
		f(g, `{"id":"b","impid":"1","price":1,"cattax":`+tax+`,"cat":["Z7rJBM"]}`, "child-directed inventory served unsafe category: Z7rJBM", 209, 357)
		f(g, `{"id":"b","impid":"1","price":1,"cattax":`+tax+`,"cat":["z7rjbm"]}`, "child-directed inventory served unsafe category: z7rjbm", 209, 357)
		f(g, `{"id":"b","impid":"1","price":1,"cattax":`+tax+`,"cat":["z7rjbmx"]}`, "", 0, 0)
	}
	f(g, `{"id":"b","impid":"1","price":1,"cattax":2,"cat":["1"]}`, "child-directed inventory: unknown category taxonomy 2", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":500,"cat":["x"],"attr":[8]}`, "child-directed inventory: unknown category taxonomy 500", 209, 357)
	f(g, `{"id":"b","impid":"1","price":1,"cattax":2}`, "", 0, 0)            // no cat: taxonomy not judged
	f(g, `{"id":"b","impid":"1","price":1,"cattax":2,"cat":[""]}`, "", 0, 0) // only empty codes
	f(g, `{"id":"b","impid":"1","price":1,"cattax":2,"attr":[9]}`, "child-directed inventory served unsafe attribute: 9", 210, 350)
	f(g, `{"id":"b","impid":"1","price":1,"attr":[1,8,9]}`, "child-directed inventory served unsafe attribute: 8", 210, 350)
	f(g, `{"id":"b","impid":"1","price":1,"cat":["IAB25"],"attr":[8]}`, "child-directed inventory served unsafe category: IAB25", 209, 357)

	pass := newAudienceSafetyForTest(t, func(o *audienceSafetyOptions) { o.UnknownTaxonomy = "pass" })
	f(pass, `{"id":"b","impid":"1","price":1,"cattax":2,"cat":["1"]}`, "", 0, 0)
	f(pass, `{"id":"b","impid":"1","price":1,"cattax":2,"cat":["1"],"attr":[9]}`, "child-directed inventory served unsafe attribute: 9", 210, 350)

	custom := newAudienceSafetyForTest(t, func(o *audienceSafetyOptions) {
		o.UnsafeCategories = map[string][]string{"1": {"IAB3"}, "500": {"bad"}, "7": {}}
	})
	f(custom, `{"id":"b","impid":"1","price":1,"cat":["IAB25"]}`, "", 0, 0) // the default set of 1 is replaced
	f(custom, `{"id":"b","impid":"1","price":1,"cat":["IAB3-2"]}`, "child-directed inventory served unsafe category: IAB3-2", 209, 357)
	f(custom, `{"id":"b","impid":"1","price":1,"cattax":500,"cat":["bad"]}`, "child-directed inventory served unsafe category: bad", 209, 357)
	f(custom, `{"id":"b","impid":"1","price":1,"cattax":7,"cat":["Z7rJBM"]}`, "", 0, 0) // known, nothing unsafe
	f(custom, `{"id":"b","impid":"1","price":1,"cattax":8,"cat":["1001"]}`, "child-directed inventory served unsafe category: 1001", 209, 357)

	// Strings from the bid are quoted as format.go quotes them (cut at 64 bytes).
	long := "IAB25-0123456789012345678901234567890123456789012345678901234567890123456789"
	_, v := txBid(t, g, coppa, `{"id":"b","impid":"1","cat":["`+long+`"]}`)
	require.Equal(t, "child-directed inventory served unsafe category: "+long[:64]+"...", v.Reason)
}

func TestAudienceSafetySkipsOtherInventory(t *testing.T) {
	g := newAudienceSafetyForTest(t, nil)
	skip, _ := txBid(t, g, `{"id":"r","imp":[{"id":"1"}]}`, `{"id":"b","impid":"1","cat":["IAB25"],"attr":[8]}`)
	require.Equal(t, "inventory not child-directed", skip)
}

func TestAudienceSafetyOptions(t *testing.T) {
	f := func(edit func(o *audienceSafetyOptions), want string) {
		t.Helper()
		o := audienceSafetyFactory.Options().(*audienceSafetyOptions)
		edit(o)
		_, err := audienceSafetyFactory.New(o, engine.Env{})
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.EqualError(t, err, want)
	}
	f(func(o *audienceSafetyOptions) {}, "")
	f(func(o *audienceSafetyOptions) { o.UnknownTaxonomy = "allow" }, `unknownTaxonomy must be reject or pass, not "allow"`)
	f(func(o *audienceSafetyOptions) { o.BundleKeywords = []string{"kids", " "} }, `bundleKeywords[1] is empty`)
	f(func(o *audienceSafetyOptions) { o.ChildCategories = []string{""} }, `childCategories[0] is empty`)
	f(func(o *audienceSafetyOptions) { o.UnsafeCategories = map[string][]string{"eight": {"1"}} },
		`unsafeCategories: taxonomy "eight" must be a positive number`)
	f(func(o *audienceSafetyOptions) { o.UnsafeCategories = map[string][]string{"8": {"1002-1001"}} },
		`unsafeCategories[8][0]: "1002-1001" is not an Ad Product 2.0 id (a number, or a range lo-hi)`)
	f(func(o *audienceSafetyOptions) {
		o.UnknownTaxonomy = ""
		o.UnsafeCategories = map[string][]string{"1": {""}}
	}, "unknownTaxonomy must be reject or pass, not \"\"\nunsafeCategories[1][0] is empty")
}

func TestAudienceSafetyDefaultsCompile(t *testing.T) {
	sets, err := compileTaxonomySets("unsafeCategories", defaultUnsafeCategories())
	require.NoError(t, err)
	require.Len(t, sets, 5)
	require.Equal(t, []idRange{{1001, 1007}, {1049, 1057}, {1259, 1261}, {1361, 1367}, {1519, 1523}, {1544, 1550}, {1576, 1582}}, sets[8].ranges)
	require.Len(t, sets[7].ids, 12)
}

// audienceSafetyInput is the typical pair on child-directed inventory: its
// three bids are safe and pass.
func audienceSafetyInput(tb testing.TB) *engine.Input {
	ev := txTypical(tb)
	ev.In.Request.Regs.COPPA = 1
	return &ev.In
}

func BenchmarkAudienceSafety(b *testing.B) {
	g := newAudienceSafetyForTest(b, nil)
	in := audienceSafetyInput(b)
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

func TestRegsExtCOPPA(t *testing.T) {
	f := func(ext string, want bool) {
		t.Helper()
		require.Equal(t, want, regsExtCOPPA([]byte(ext)), ext)
	}
	f(`{"coppa":1}`, true)
	f(` { "a" : {"coppa":0, "x":[1,{"y":"}"}]} , "coppa" : 1 } `, true) // nested members are not top-level
	f(`{"coppa":1,"coppa":0}`, false)                                   // the last one wins
	f(`{"coppa":0,"COPPA":1}`, true)                                    // keys differing only in case too
	f(`{"s":"a,\"b\\","coppa":"1"}`, false)
	f(`{"coppa":true}`, false)
	f(`{"coppa":1.0}`, true) // numbers compare as values
	f(`{"coppa":1e0}`, true)
	f(`{"coppa":10E-1}`, true)
	f(`{"coppa":0.1e1}`, true)
	f(`{"coppa":1.5}`, false)
	f(`{"coppa":2}`, false)
	f(`{"x":{"coppa":1}}`, false)
	f(``, false)
	f(`null`, false)
}
