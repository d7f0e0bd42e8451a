package gates

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// Scan budgets at the size exchanges run: maxNodes bounds each bid's walk and
// the envelope's, so a response of 1,000 bids is judged bid by bid.

// bidsResponse is a response of n bids in one seatbid; bid i is written by
// bid(i) (its members after id and impid), the envelope's extra members by
// env.
func bidsResponse(n int, env string, bid func(i int) string) []byte {
	var b strings.Builder
	b.WriteString(`{"id":"r",` + env + `"seatbid":[{"seat":"s","bid":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"b%d","impid":"1",%s}`, i, bid(i))
	}
	b.WriteString(`]}]}`)
	return []byte(b.String())
}

// pad is a JSON array of n numbers: n+1 values.
func pad(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }

func checkPII(t *testing.T, resp []byte) *engine.Report {
	t.Helper()
	text := "policy:\n  gates:\n    - gate: pii\n"
	cfg, err := config.Parse("test.yaml", []byte(text))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(text), Builtin())
	require.NoError(t, err)
	rep, ev, err := engine.Check(snap, []byte(`{"id":"r","imp":[{"id":"1"}]}`), resp, engine.CheckOptions{LatencyMs: -1})
	require.NoError(t, err)
	engine.ReleaseEval(ev)
	return rep
}

// A 1,000-bid response with pii enforced at the default maxNodes (10,000):
// the bids over their budget fail alone, a bid whose hit comes before its
// budget runs out fails for the hit, every other bid passes. The whole
// response holds about 125,000 values.
func TestThousandBidsOnlyBidsOverBudgetFail(t *testing.T) {
	resp := bidsResponse(1000, "", func(i int) string {
		switch {
		case i == 407:
			return `"price":1,"adm":"mail me@brand.com","ext":{"pad":` + pad(10000) + `}`
		case i%100 == 7:
			return `"price":1,"adm":"<div>ad</div>","ext":{"pad":` + pad(10000) + `}`
		case i == 3:
			return `"price":1,"adm":"write to me@brand.com"`
		}
		return `"price":1,"adm":"<div>ad</div>"`
	})
	rep := checkPII(t, resp)
	var want []hit
	for i := range 1000 {
		switch {
		case i == 3 || i == 407:
			want = append(want, hit{fmt.Sprintf("b%d", i), reasonEmail, 200, 350})
		case i%100 == 7:
			want = append(want, hit{fmt.Sprintf("b%d", i), reasonScanLimit, 3, 300})
		}
	}
	require.Equal(t, want, hits(rep))
	require.Equal(t, "filter", rep.Action)
}

// The envelope over its budget fails the response, and only it: each bid is
// judged under its own budget all the same.
func TestEnvelopeOverBudgetFailsTheResponse(t *testing.T) {
	resp := bidsResponse(1000, `"ext":{"pad":`+pad(10000)+`},`, func(i int) string {
		if i == 3 {
			return `"price":1,"adm":"write to me@brand.com"`
		}
		return `"price":1,"adm":"<div>ad</div>"`
	})
	rep := checkPII(t, resp)
	require.Equal(t, []hit{{"b3", reasonEmail, 200, 350}, {"", reasonScanLimit, 3, 300}}, hits(rep))
	require.Equal(t, "no-bid", rep.Action)
}

// countingMatcher counts the strings it is shown.
type countingMatcher struct{ n int }

func (m *countingMatcher) match([]byte) string { m.n++; return "" }

// The walk is linear in bids: each bid's strings are matched once, whatever
// the number of bids before it (15 values and 3 strings per bid here, so
// 1,000 bids hold 15,000 values, past one budget of 10,000).
func TestScanIsLinearInBids(t *testing.T) {
	for _, n := range []int{10, 100, 1000} {
		resp := bidsResponse(n, `"cur":"USD",`, func(int) string { return `"price":1,"adm":"<div>ad</div>","ext":{"v":[1,2,3,4,5,6,7,8]}` })
		ev := engine.AcquireEval()
		require.NoError(t, ev.DecodeResponse(resp, 1000))
		sc := newFakeScope(&ev.In)
		m := &countingMatcher{}
		scanResponse(sc, m, scanLimit{maxNodes: defaultMaxNodes})
		engine.ReleaseEval(ev)
		require.Equal(t, 3*n+3, m.n, "%d bids: 3 strings each and 3 in the envelope", n)
		require.Equal(t, n, sc.ticks, "one tick per bid")
		require.Zero(t, sc.hits)
	}
}

// BenchmarkScanBids is the walk against bids: one response decoded, its
// values walked and matched by a matcher that never hits (the pass path of
// a scanning gate), per bid.
func BenchmarkScanBids(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			resp := bidsResponse(n, `"cur":"USD",`, func(int) string {
				return `"price":1,"crid":"c","adomain":["brand.com"],"adm":"<div>an ad</div>"`
			})
			ev := engine.AcquireEval()
			defer engine.ReleaseEval(ev)
			require.NoError(b, ev.DecodeResponse(resp, 1000))
			sc := newFakeScope(&ev.In)
			b.ReportAllocs()
			for b.Loop() {
				sc.built = false
				scanResponse(sc, nopMatcher{}, scanLimit{maxNodes: defaultMaxNodes})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/bid")
		})
	}
}
