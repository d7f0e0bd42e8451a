package gates

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/stretchr/testify/require"
)

func newBcatComplianceForTest(t testing.TB, hierarchical bool) *bcatCompliance {
	t.Helper()
	o := bcatComplianceFactory.Options().(*bcatComplianceOptions)
	require.True(t, o.Hierarchical, "default")
	o.Hierarchical = hierarchical
	g, err := bcatComplianceFactory.New(o, engine.Env{})
	require.NoError(t, err)
	return g.(*bcatCompliance)
}

func TestBcatCompliance(t *testing.T) {
	hier, exact := newBcatComplianceForTest(t, true), newBcatComplianceForTest(t, false)
	f := func(g *bcatCompliance, req, bid, want string) {
		t.Helper()
		skip, v := txBid(t, g, req, bid)
		switch {
		case want == "":
			require.Empty(t, skip, bid)
			require.False(t, v.Failed() || v.Skipped(), "%s: %s", bid, v.Reason)
		case want == "no bcat in request":
			require.Equal(t, want, skip, bid)
		case want == reasonBcatTaxonomy:
			require.Empty(t, skip, bid)
			require.True(t, v.Skipped(), bid)
			require.Equal(t, want, v.Reason)
			require.Equal(t, "taxonomy", v.Details)
		default:
			require.Empty(t, skip, bid)
			require.True(t, v.Failed(), bid)
			require.Equal(t, want, v.Reason, bid)
			require.Equal(t, 209, v.Loss)
			require.Equal(t, 357, v.NBR)
		}
	}
	const r25 = `{"id":"r","imp":[{"id":"1"}],"bcat":["IAB25","IAB7-39"]}`
	f(hier, r25, `{"id":"b","impid":"1","cat":["IAB1"]}`, "")
	f(hier, r25, `{"id":"b","impid":"1"}`, "")
	f(hier, r25, `{"id":"b","impid":"1","cat":["IAB1","IAB25"]}`, "blocked category in response: IAB25")
	f(hier, r25, `{"id":"b","impid":"1","cat":["IAB25-3"]}`, "blocked category in response: IAB25-3")
	f(hier, r25, `{"id":"b","impid":"1","cat":["iab25-3"]}`, "blocked category in response: iab25-3")
	f(hier, r25, `{"id":"b","impid":"1","cat":["IAB250"]}`, "")
	f(hier, r25, `{"id":"b","impid":"1","cat":["IAB7"]}`, "")
	f(hier, r25, `{"id":"b","impid":"1","cat":["IAB7-3"]}`, "")
	f(hier, r25, `{"id":"b","impid":"1","cat":["IAB7-39"]}`, "blocked category in response: IAB7-39")
	f(hier, r25, `{"id":"b","impid":"1","cattax":1,"cat":["IAB25-1"]}`, "blocked category in response: IAB25-1")
	f(exact, r25, `{"id":"b","impid":"1","cat":["IAB25-3"]}`, "")
	f(exact, r25, `{"id":"b","impid":"1","cat":["IAB25"]}`, "blocked category in response: IAB25")
	f(exact, r25, `{"id":"b","impid":"1","cat":["iab25"]}`, "blocked category in response: iab25")
	f(hier, `{"id":"r","imp":[{"id":"1"}],"bcat":["IAB2"]}`, `{"id":"b","impid":"1","cat":["IAB25"]}`, "")

	// The same-taxonomy rule: request cattax and bid cattax, both default 1.
	f(hier, r25, `{"id":"b","impid":"1","cattax":7,"cat":["IAB25"]}`, reasonBcatTaxonomy)
	f(hier, r25, `{"id":"b","impid":"1","cattax":7}`, "") // no category: nothing to skip
	const r7 = `{"id":"r","imp":[{"id":"1"}],"cattax":7,"bcat":["Z7rJBM","150"]}`
	f(hier, r7, `{"id":"b","impid":"1","cat":["IAB25"]}`, reasonBcatTaxonomy)
	f(hier, r7, `{"id":"b","impid":"1","cattax":7,"cat":["Z7rJBM"]}`, "blocked category in response: Z7rJBM")
	f(hier, r7, `{"id":"b","impid":"1","cattax":7,"cat":["z7rjbm"]}`, "blocked category in response: z7rjbm")
	f(hier, r7, `{"id":"b","impid":"1","cattax":7,"cat":["Z7rJBM-1"]}`, "")
	f(hier, r7, `{"id":"b","impid":"1","cattax":7,"cat":["150-1"]}`, "")
	f(hier, r7, `{"id":"b","impid":"1","cattax":7,"cat":["150"]}`, "blocked category in response: 150")

	// Nothing blocked: skipped.
	f(hier, `{"id":"r","imp":[{"id":"1"}]}`, `{"id":"b","impid":"1","cat":["IAB25"]}`, "no bcat in request")
	f(hier, `{"id":"r","imp":[{"id":"1"}],"bcat":[]}`, `{"id":"b","impid":"1","cat":["IAB25"]}`, "no bcat in request")
	f(hier, `{"id":"r","imp":[{"id":"1"}],"bcat":[""]}`, `{"id":"b","impid":"1","cat":[""]}`, "no bcat in request")
	f(hier, `{"id":"r","imp":[{"id":"1"}],"bcat":["","IAB25"]}`, `{"id":"b","impid":"1","cat":["","IAB25-3"]}`, "blocked category in response: IAB25-3")
}

// TestBcatComplianceSameCategory: CheckBid, which picks the rule once per
// bid, blocks the first category that sameCategory matches with any bcat
// entry, for every taxonomy pair, rule, case and C- prefix below.
func TestBcatComplianceSameCategory(t *testing.T) {
	codes := []string{"", "IAB1", "iab1", "IAB1-2", "IAB1-", "IAB12", "IAB", "1", "01", "Rm3SiT", "rm3sit", "IAB1-2-3", "-", "IAB1_2"}
	lists := [][]string{{"IAB1"}, {"iab1-2"}, {"", "IAB12"}, {"1", "rm3sit"}, {"IAB"}, {"IAB1-2-3", "-"}}
	cats := [][]string{{"IAB1-2"}, {"IAB12", "iab1"}, {"", "IAB1-"}, {"01", "1"}, {"RM3SIT"}, {"IAB1_2", "IAB1-2-3"}, codes}
	quoteList := func(l []string) string {
		q := make([]string, len(l))
		for i, c := range l {
			q[i] = `"` + c + `"`
		}
		return "[" + strings.Join(q, ",") + "]"
	}
	checked := 0
	for _, hierarchical := range []bool{true, false} {
		g := newBcatComplianceForTest(t, hierarchical)
		for _, tax := range []int64{0, 1, 2, 6, 7} {
			cattax := ""
			if tax != 0 {
				cattax = fmt.Sprintf(`,"cattax":%d`, tax)
			}
			for _, bcat := range lists {
				req := `{"id":"r","imp":[{"id":"1"}],"bcat":` + quoteList(bcat) + cattax + `}`
				for _, cat := range cats {
					skip, v := txBid(t, g, req, `{"id":"b","impid":"1","price":1,"cat":`+quoteList(cat)+cattax+`}`)
					require.Empty(t, skip)
					want := ""
				find:
					for _, c := range cat {
						for _, code := range bcat {
							if c != "" && sameCategory(catTaxOf(adcom1.CategoryTaxonomy(tax)), code, c, hierarchical) {
								want = "blocked category in response: " + quote(c)
								break find
							}
						}
					}
					got := ""
					if v.Failed() {
						got = v.Reason
					}
					require.Equal(t, want, got, "%s %v %v hierarchical %v", req, cat, tax, hierarchical)
					if want != "" {
						checked++
					}
				}
			}
		}
	}
	require.Greater(t, checked, 20)
}

func BenchmarkBcatCompliance(b *testing.B) {
	g := newBcatComplianceForTest(b, true)
	ev := txTypical(b)
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

// TestBcatComplianceCountsTaxonomySkips runs the engine: a bid in another
// taxonomy is a per-bid skip counted with why="taxonomy".
func TestBcatComplianceCountsTaxonomySkips(t *testing.T) {
	const cfg = "policy:\n  gates:\n    - gate: bcatCompliance\n"
	c, err := config.Parse("bidguard.yaml", []byte(cfg))
	require.NoError(t, err)
	snap, err := engine.Compile(c, "bidguard.yaml", []byte(cfg), Builtin())
	require.NoError(t, err)
	rep, ev, err := engine.Check(snap,
		[]byte(`{"id":"r","imp":[{"id":"1"}],"cattax":7,"bcat":["Z7rJBM"]}`),
		[]byte(`{"id":"r","seatbid":[{"seat":"s","bid":[{"id":"a","impid":"1","cat":["IAB25"]},{"id":"b","impid":"1","cattax":7,"cat":["Z7rJBM"]}]}]}`),
		engine.CheckOptions{LatencyMs: -1})
	require.NoError(t, err)
	defer engine.ReleaseEval(ev)
	require.Equal(t, []engine.BidSkip{{Gate: "rtb.bcat-compliance", Why: "taxonomy"}}, ev.Out.Skips)
	require.Len(t, rep.Rejected, 1)
	require.Equal(t, "b", rep.Rejected[0].BidID)
}
