package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func newMediaType(t testing.TB, requireMtype bool) engine.BidGate {
	t.Helper()
	opts := mediaTypeFactory.Options().(*mediaTypeOptions)
	require.False(t, opts.RequireMtype, "default")
	opts.RequireMtype = requireMtype
	g, err := mediaTypeFactory.New(opts, engine.Env{})
	require.NoError(t, err)
	return g.(engine.BidGate)
}

func TestMediaType(t *testing.T) {
	f := func(requireMtype bool, req, resp string, want ...string) {
		t.Helper()
		require.Equal(t, want, mediaJudge(t, newMediaType(t, requireMtype), req, resp))
	}
	const codes = " (204/353)"

	f(false, `{"id":"r","imp":[]}`, mediaResp(`{"id":"b","impid":"1","mtype":1}`), "prepare skip no imp in request")

	// 2.6: mtype must be offered; unknown values never are.
	imps := mediaReq(`{"id":"1","banner":{},"native":{"request":"{}"}}`, `{"id":"2","video":{}}`, `{"id":"3","audio":{}}`, `{"id":"4"}`)
	f(false, imps, mediaResp(
		`{"id":"b1","impid":"1","mtype":1}`,
		`{"id":"b2","impid":"1","mtype":4}`,
		`{"id":"b3","impid":"1","mtype":2}`,
		`{"id":"b4","impid":"2","mtype":2}`,
		`{"id":"b5","impid":"3","mtype":3}`,
		`{"id":"b6","impid":"3","mtype":5}`,
		`{"id":"b7","impid":"2","mtype":-1}`,
		`{"id":"b8","impid":"4","mtype":1}`,
		`{"id":"b9","impid":"x","mtype":1}`,
	), "pass", "pass", "reject media type 2 not offered by imp 1"+codes, "pass", "pass",
		"reject media type 5 not offered by imp 3"+codes, "reject media type -1 not offered by imp 2"+codes,
		"reject media type 1 not offered by imp 4"+codes, "skip bid matches no imp (imp)")

	// 2.5: no mtype passes by default; with requireMtype only a multi-type imp fails.
	resp := mediaResp(`{"id":"b1","impid":"1"}`, `{"id":"b2","impid":"2"}`, `{"id":"b3","impid":"4"}`)
	f(false, imps, resp, "pass", "pass", "pass")
	f(true, imps, resp, "reject bid has no mtype and imp 1 offers several media types"+codes, "pass", "pass")

	// Imp ids in reasons are quoted.
	f(false, mediaReq(`{"id":"a\u0001b","banner":{}}`), mediaResp(`{"id":"b","impid":"a\u0001b","mtype":2}`),
		"reject media type 2 not offered by imp a?b"+codes)
}

func BenchmarkMediaType(b *testing.B) {
	in := mediaTypical(b)
	g := newMediaType(b, true)
	b.ReportAllocs()
	for b.Loop() {
		if g.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() || v.Skipped() {
				b.Fatal(v.Reason)
			}
		}
	}
}
