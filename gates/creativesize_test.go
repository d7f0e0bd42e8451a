package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCreativeSize(t *testing.T) {
	g := &creativeSize{}
	f := func(req, resp string, want ...string) {
		t.Helper()
		require.Equal(t, want, mediaJudge(t, g, req, resp))
	}
	const bad = " not allowed (203/351)"

	f(mediaReq(`{"id":"1","video":{"w":640,"h":480}}`), mediaResp(`{"id":"b","impid":"1","mtype":1,"w":1,"h":1}`),
		"prepare skip no banner in request")

	// Banner w×h and fixed formats; flexible formats ignored.
	banner := `{"id":"1","banner":{"w":300,"h":250,"format":[{"w":320,"h":50},{"w":0,"h":90},{"wratio":16,"hratio":9,"wmin":320},{"w":728,"h":90,"wratio":8,"hratio":1}]}}`
	f(mediaReq(banner), mediaResp(
		`{"id":"b1","impid":"1","mtype":1,"w":300,"h":250}`,
		`{"id":"b2","impid":"1","mtype":1,"w":320,"h":50}`,
		`{"id":"b3","impid":"1","mtype":1,"w":250,"h":300}`,
		`{"id":"b4","impid":"1","mtype":1,"w":728,"h":90}`,
		`{"id":"b5","impid":"1","mtype":1,"w":0,"h":90}`,
		`{"id":"b6","impid":"1","mtype":1}`,
		`{"id":"b7","impid":"1","mtype":1,"w":300}`,
	), "pass", "pass", "reject creative size 250x300"+bad, "reject creative size 728x90"+bad,
		"reject creative size 0x90"+bad, "reject creative size missing (203/351)", "reject creative size 300x0"+bad)

	// A bid without a size passes when the imp offers exactly one fixed
	// size (the banner's w×h and its fixed formats together).
	for _, one := range []string{
		`{"id":"1","banner":{"w":300,"h":250}}`,
		`{"id":"1","banner":{"format":[{"w":300,"h":250}]}}`,
		`{"id":"1","banner":{"w":300,"h":250,"format":[{"w":300,"h":250},{"wratio":1,"hratio":1,"wmin":50}]}}`,
	} {
		f(mediaReq(one), mediaResp(
			`{"id":"b1","impid":"1","mtype":1}`,
			`{"id":"b2","impid":"1","mtype":1,"w":0,"h":0}`,
			`{"id":"b3","impid":"1","mtype":1,"h":250}`,
		), "pass", "pass", "reject creative size 0x250"+bad)
	}
	f(mediaReq(`{"id":"1","banner":{"format":[{"w":300,"h":250},{"w":320,"h":50}]}}`),
		mediaResp(`{"id":"b1","impid":"1","mtype":1}`), "reject creative size missing (203/351)")

	// Formats only (no banner w/h), as 2.6 recommends.
	f(mediaReq(`{"id":"1","banner":{"format":[{"w":300,"h":250},{"w":300,"h":600}]}}`), mediaResp(
		`{"id":"b1","impid":"1","w":300,"h":600}`,
		`{"id":"b2","impid":"1","w":301,"h":600}`,
	), "pass", "reject creative size 301x600"+bad)

	// A banner with only w (or only flexible formats) declares no fixed size.
	f(mediaReq(`{"id":"1","banner":{"w":300}}`, `{"id":"2","banner":{"format":[{"wratio":1,"hratio":1,"wmin":50}]}}`, `{"id":"3","banner":{"wmin":100,"wmax":400}}`),
		mediaResp(
			`{"id":"b1","impid":"1","mtype":1,"w":1,"h":1}`,
			`{"id":"b2","impid":"2","mtype":1,"w":1,"h":1}`,
			`{"id":"b3","impid":"3","w":1,"h":1}`,
		), "skip imp declares no fixed size (size)", "skip imp declares no fixed size (size)", "skip imp declares no fixed size (size)")

	// Only banner bids: mtype 1, or a 2.5 bid on a banner-only imp.
	multi := `{"id":"1","banner":{"w":300,"h":250},"video":{"w":640,"h":480}}`
	f(mediaReq(multi, `{"id":"2","banner":{"w":728,"h":90}}`), mediaResp(
		`{"id":"b1","impid":"1","w":640,"h":480}`,
		`{"id":"b2","impid":"1","mtype":2,"w":640,"h":480}`,
		`{"id":"b3","impid":"1","mtype":1,"w":640,"h":480}`,
		`{"id":"b4","impid":"2","w":300,"h":250}`,
		`{"id":"b5","impid":"2","mtype":9,"w":300,"h":250}`,
		`{"id":"b6","impid":"7","mtype":1}`,
	), "skip not a banner bid (media)", "skip not a banner bid (media)", "reject creative size 640x480"+bad,
		"reject creative size 300x250"+bad, "skip not a banner bid (media)", "skip bid matches no imp (imp)")

	// mtype 1 on an imp without a banner: nothing to compare with.
	f(mediaReq(`{"id":"1","video":{}}`, `{"id":"2","banner":{"w":1,"h":1}}`), mediaResp(`{"id":"b","impid":"1","mtype":1,"w":1,"h":2}`),
		"skip imp declares no fixed size (size)")
}

func BenchmarkCreativeSize(b *testing.B) {
	in := mediaTypical(b)
	g := &creativeSize{}
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
