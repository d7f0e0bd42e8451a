package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBattrCompliance(t *testing.T) {
	g := &battrCompliance{}
	f := func(req, resp string, want ...string) {
		t.Helper()
		require.Equal(t, want, mediaJudge(t, g, req, resp))
	}
	const blocked = "reject blocked creative attribute: "

	// No imp blocks anything.
	f(mediaReq(`{"id":"1","banner":{"w":300,"h":250}}`), mediaResp(`{"id":"b","impid":"1","attr":[1]}`),
		"prepare skip no battr in request")
	f(mediaReq(`{"id":"1","banner":{"battr":[]},"video":{}}`), mediaResp(`{"id":"b","impid":"1","attr":[1]}`),
		"prepare skip no battr in request")

	// 2.6: mtype picks the media object.
	imp := `{"id":"1","banner":{"battr":[1,2]},"video":{"battr":[3,4]}}`
	f(mediaReq(imp), mediaResp(
		`{"id":"b1","impid":"1","mtype":1,"attr":[3,2]}`,
		`{"id":"b2","impid":"1","mtype":2,"attr":[1,2]}`,
		`{"id":"b3","impid":"1","mtype":2,"attr":[5,4,3]}`,
		`{"id":"b4","impid":"1","mtype":1}`,
	), blocked+"2 (210/350)", "pass", blocked+"4 (210/350)", "pass")

	// No mtype on a multi-type imp, an unknown mtype, or an mtype the imp does
	// not carry: the union of all battr.
	f(mediaReq(imp), mediaResp(
		`{"id":"b1","impid":"1","attr":[3]}`,
		`{"id":"b2","impid":"1","mtype":7,"attr":[1]}`,
		`{"id":"b3","impid":"1","mtype":3,"attr":[4]}`,
		`{"id":"b4","impid":"1","attr":[5,6]}`,
	), blocked+"3 (210/350)", blocked+"1 (210/350)", blocked+"4 (210/350)", "pass")

	// 2.5: no mtype, inferred from a single-type imp.
	f(mediaReq(`{"id":"1","video":{"battr":[9]}}`, `{"id":"2","banner":{}}`, `{"id":"3","native":{"request":"{}","battr":[8]}}`),
		mediaResp(
			`{"id":"b1","impid":"1","attr":[9]}`,
			`{"id":"b2","impid":"2","attr":[9]}`,
			`{"id":"b3","impid":"3","attr":[7,8]}`,
			`{"id":"b4","impid":"9","attr":[9]}`,
		), blocked+"9 (210/350)", "pass", blocked+"8 (210/350)", "skip bid matches no imp (imp)")

	// Audio.
	f(mediaReq(`{"id":"1","audio":{"battr":[14]}}`), mediaResp(`{"id":"b","impid":"1","mtype":3,"attr":[14]}`),
		blocked+"14 (210/350)")
}

func BenchmarkBattrCompliance(b *testing.B) {
	in := mediaTypical(b)
	g := &battrCompliance{}
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
