package gates

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dsaReq is a one-imp request with the given regs object.
func dsaReq(regs string) string {
	return `{"id":"r","imp":[{"id":"1","banner":{"w":300,"h":250}}],"regs":` + regs + `}`
}

// dsaBid is a bid with the given ext object.
func dsaBid(id, ext string) string {
	b := `{"id":"` + id + `","impid":"1","price":1`
	if ext != "" {
		b += `,"ext":` + ext
	}
	return b + `}`
}

func TestDSA(t *testing.T) {
	g := &dsa{}
	f := func(req, resp string, want ...string) {
		t.Helper()
		require.Equal(t, want, mediaJudge(t, g, req, resp))
	}
	const (
		skip     = "prepare skip no dsa in request"
		missing  = "reject missing dsa transparency (200/300)"
		invalid  = "reject invalid dsa transparency (200/300)"
		conflict = "reject dsa render conflict (200/300)"
	)
	none := mediaResp(dsaBid("b", ""))

	// No requirement: no regs, no dsa, dsarequired absent, 0, 1, or not an integer.
	f(`{"id":"r","imp":[{"id":"1","banner":{}}]}`, none, skip)
	f(dsaReq(`{"coppa":0}`), none, skip)
	f(dsaReq(`{"ext":{"gdpr":1}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":{}}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":0}}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":1}}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":4}}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":"2"}}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":2.5}}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":"yes"}}`), none, skip)
	f(dsaReq(`{"dsa":{"dsarequired":1}}`), none, skip)

	// Required (2 or 3, regs.ext.dsa or regs.dsa): a bid without dsa fails.
	for _, regs := range []string{`{"ext":{"dsa":{"dsarequired":2}}}`, `{"ext":{"dsa":{"dsarequired":3}}}`,
		`{"dsa":{"dsarequired":2}}`, `{"coppa":1,"dsa":{"dsarequired":3,"pubrender":1}}`, `{"ext":{"dsa":{"dsarequired":2.0}}}`,
		`{"EXT":{"Dsa":{"DsaRequired":2}}}`, `{"ext":{"dsa":null},"dsa":{"dsarequired":2}}`} {
		f(dsaReq(regs), mediaResp(
			dsaBid("b1", ""),
			dsaBid("b2", `{"x":1}`),
			dsaBid("b3", `{"dsa":null}`),
			dsaBid("b4", `{"dsa":{}}`),
			dsaBid("b5", `{"DSA":{"behalf":"Advertiser","paid":"Advertiser"}}`),
		), missing, missing, missing, "pass", "pass")
	}

	// regs.ext.dsa, when an object, wins over regs.dsa.
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":1}},"dsa":{"dsarequired":2}}`), none, skip)
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":2}},"dsa":{"dsarequired":0}}`), none, missing)

	// behalf and paid: at most 100 code points, strings (or null).
	req := dsaReq(`{"ext":{"dsa":{"dsarequired":2}}}`)
	e100, e101 := strings.Repeat("é", 100), strings.Repeat("é", 101)
	f(req, mediaResp(
		dsaBid("b1", `{"dsa":{"behalf":"`+e100+`","paid":"`+strings.Repeat("a", 100)+`"}}`),
		dsaBid("b2", `{"dsa":{"behalf":"`+e101+`"}}`),
		dsaBid("b3", `{"dsa":{"paid":"`+strings.Repeat("a", 101)+`"}}`),
		dsaBid("b4", `{"dsa":{"behalf":"`+strings.Repeat(`\u00e9`, 100)+`"}}`),
		dsaBid("b5", `{"dsa":{"behalf":"`+strings.Repeat(`\ud83d\ude00`, 101)+`"}}`),
		dsaBid("b6", `{"dsa":{"behalf":7}}`),
		dsaBid("b7", `{"dsa":{"paid":null,"behalf":null}}`),
		dsaBid("b8", `{"dsa":"Advertiser"}`),
		dsaBid("b9", `{"dsa":[]}`),
		dsaBid("b10", `{"dsa":{"behalf":"`+e101+`","behalf":"ok"}}`),
	), "pass", invalid, invalid, "pass", invalid, invalid, "pass", invalid, invalid, "pass")

	// Render conflicts: pubrender 0 + adrender 0, pubrender 2 + adrender 1.
	render := func(pub string, ads ...string) []string {
		regs := `{"ext":{"dsa":{"dsarequired":3` + pub + `}}}`
		var bids []string
		for i, ad := range ads {
			bids = append(bids, dsaBid("b"+string(rune('0'+i)), `{"dsa":{"behalf":"A","paid":"A"`+ad+`}}`))
		}
		return mediaJudge(t, g, dsaReq(regs), mediaResp(bids...))
	}
	ads := []string{`,"adrender":0`, `,"adrender":1`, ``, `,"adrender":null`, `,"adrender":"0"`, `,"adrender":2`}
	require.Equal(t, []string{conflict, "pass", "pass", "pass", "pass", "pass"}, render(`,"pubrender":0`, ads...))
	require.Equal(t, []string{"pass", "pass", "pass", "pass", "pass", "pass"}, render(`,"pubrender":1`, ads...))
	require.Equal(t, []string{"pass", conflict, "pass", "pass", "pass", "pass"}, render(`,"pubrender":2`, ads...))
	require.Equal(t, []string{"pass", "pass", "pass", "pass", "pass", "pass"}, render(``, ads...))
	require.Equal(t, []string{"pass", "pass", "pass", "pass", "pass", "pass"}, render(`,"pubrender":"0"`, ads...))

	// pubrender read from regs.dsa (raw request).
	f(dsaReq(`{"dsa":{"dsarequired":2,"pubrender":2}}`), mediaResp(dsaBid("b1", `{"dsa":{"adrender":1}}`), dsaBid("b2", `{"dsa":{"adrender":0}}`)),
		conflict, "pass")
	// The last regs key wins, as encoding/json decodes it.
	f(`{"id":"r","regs":{"dsa":{"dsarequired":2,"pubrender":0}},"imp":[{"id":"1"}],"regs":{"dsa":{"dsarequired":2,"pubrender":2}}}`,
		mediaResp(dsaBid("b1", `{"dsa":{"adrender":0}}`)), "pass")

	// Order: missing, then invalid, then conflict.
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":2,"pubrender":0}}}`), mediaResp(dsaBid("b", `{"dsa":{"adrender":0,"paid":"`+e101+`"}}`)), invalid)

	// 2.5 and 2.6 bids alike (mtype plays no part).
	f(dsaReq(`{"ext":{"dsa":{"dsarequired":2}}}`), mediaResp(`{"id":"b1","impid":"1","mtype":1,"ext":{"dsa":{"behalf":"A"}}}`, `{"id":"b2","impid":"1"}`),
		"pass", missing)
}

// dsaTypical returns the typical pair with a DSA requirement in the given
// place ("ext": regs.ext.dsa, "regs": regs.dsa) and a valid bid.ext.dsa on
// every bid.
func dsaTypical(tb testing.TB, where string) (req, resp string) {
	tb.Helper()
	rq, err := os.ReadFile("testdata/typical-request.json")
	require.NoError(tb, err)
	rs, err := os.ReadFile("testdata/typical-response.json")
	require.NoError(tb, err)
	obj := `{"dsarequired": 2, "pubrender": 0, "datatopub": 2, "transparency": [{"domain": "platform.example", "dsaparams": [1, 2]}]}`
	regs := `"regs": {"coppa": 0, "ext": {"gdpr": 1, "dsa": ` + obj + `}}`
	if where == "regs" {
		regs = `"regs": {"coppa": 0, "ext": {"gdpr": 1}, "dsa": ` + obj + `}`
	}
	req = strings.Replace(string(rq), `"regs": {"coppa": 0}`, regs, 1)
	bidDSA := `"dsa": {"behalf": "Brand Advertiser GmbH", "paid": "Brand Advertiser GmbH", "adrender": 1, "transparency": [{"domain": "dsp.example", "dsaparams": [1, 2]}]}`
	resp = strings.Replace(string(rs), `"ext": {"dsp": {"line": 7, "deal": null}}`, `"ext": {"dsp": {"line": 7, "deal": null}, `+bidDSA+`}`, 1)
	resp = strings.Replace(resp, `"adid": "ad-2",`, `"adid": "ad-2", "ext": {`+bidDSA+`},`, 1)
	resp = strings.Replace(resp, `"adid": "ad-3",`, `"adid": "ad-3", "ext": {`+bidDSA+`},`, 1)
	require.NotEqual(tb, string(rq), req)
	require.Equal(tb, 3, strings.Count(resp, `"dsa"`))
	return req, resp
}

func TestDSATypical(t *testing.T) {
	for _, where := range []string{"ext", "regs"} {
		req, resp := dsaTypical(t, where)
		require.Equal(t, []string{"pass", "pass", "pass"}, mediaJudge(t, &dsa{}, req, resp), where)
	}
	require.Equal(t, []string{"prepare skip no dsa in request"}, mediaJudge(t, &dsa{}, mediaReq(`{"id":"1"}`), mediaResp(dsaBid("b", ""))))
}

func BenchmarkDSA(b *testing.B) {
	run := func(b *testing.B, req, resp string, skip bool) {
		in := mediaEval(b, req, resp)
		g := &dsa{}
		b.ReportAllocs()
		for b.Loop() {
			if (g.Prepare(in) != "") != skip {
				b.Fatal("prepare")
			}
			if skip {
				continue
			}
			for i := range in.Bids {
				if v := g.CheckBid(in, &in.Bids[i]); v.Failed() || v.Skipped() {
					b.Fatal(v.Reason)
				}
			}
		}
	}
	b.Run("typical", func(b *testing.B) {
		rq, _ := os.ReadFile("testdata/typical-request.json")
		rs, _ := os.ReadFile("testdata/typical-response.json")
		run(b, string(rq), string(rs), true)
	})
	b.Run("regs.ext.dsa", func(b *testing.B) {
		req, resp := dsaTypical(b, "ext")
		run(b, req, resp, false)
	})
	b.Run("regs.dsa", func(b *testing.B) {
		req, resp := dsaTypical(b, "regs")
		run(b, req, resp, false)
	})
}
