package rtb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/bidguard/bidguard/jsonraw"
)

func TestCleanResponseForwarded(t *testing.T) {
	resp := readFile(t, "typical-response.json")
	sc, b := setup(t, testbidder.Answer(200, resp), "")
	a := sc.post("/bid", withTmax(t, 1000), "X-Openrtb-Version: 2.6")
	require.Equal(t, 200, a.status, "body: %s", a.body)
	require.Equal(t, []string{"512/b1", "512/b2", "777/b3"}, bidIDs(t, a.body))
	require.Equal(t, "application/json", a.header.Get("Content-Type"))
	require.Equal(t, sc.holder.Load().Version, a.header.Get("X-Bidguard-Config"))
	require.Equal(t, "0", a.header.Get("X-Bidguard-Rejected"))
	// ext byte for byte, adm without HTML escaping (the typical bids are
	// clean: carried as the bidder sent them).
	require.Contains(t, string(a.body), `{"dsp": {"line": 7, "deal": null}}`)
	require.Contains(t, string(a.body), `"<div class=\"ad\"><a href=\"https://click.brand-one.com/c?id=b1\">`)
	require.NotContains(t, string(a.body), `\u003c`)
	require.EqualValues(t, 1, b.Calls.Load())
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="bid"}`))
	require.EqualValues(t, 3, sc.metric(`bidguard_bids_total{seat="other",verdict="passed"}`))
}

// typicalWith returns the typical response with bid b2's impid replaced
// (impidMatch rejects an unknown impid).
func typicalWith(t testing.TB, old, new string) []byte {
	t.Helper()
	r := readFile(t, "typical-response.json")
	require.Contains(t, string(r), old)
	return bytes.Replace(r, []byte(old), []byte(new), 1)
}

func TestBadBidRemovedOthersKept(t *testing.T) {
	resp := typicalWith(t, `"id": "b3", "impid": "3"`, `"id": "b3", "impid": "9"`)
	sc, _ := setup(t, testbidder.Answer(200, resp), "")
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 200, a.status)
	require.Equal(t, []string{"512/b1", "512/b2"}, bidIDs(t, a.body), "the emptied seatbid 777 is removed")
	require.NotContains(t, string(a.body), `"777"`)
	require.Equal(t, "1", a.header.Get("X-Bidguard-Rejected"))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="filtered"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_bids_rejected_total{seat="other",gate="rtb.impid-match",nbr="300"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_bids_total{seat="other",verdict="rejected"}`))
	require.EqualValues(t, 2, sc.metric(`bidguard_bids_total{seat="other",verdict="passed"}`))
}

const allBad = `{"id":"req-typical-1","seatbid":[{"seat":"512","bid":[
 {"id":"x1","impid":"1"},
 {"id":"x2","impid":"nope","price":1}]}]}`

func TestAllRejectedIs204(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(200, []byte(allBad)), "")
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 204, a.status)
	require.Empty(t, a.body)
	require.Equal(t, "2", a.header.Get("X-Bidguard-Rejected"))
	require.NotEmpty(t, a.header.Get("X-Bidguard-Config"))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="rejected"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_bids_rejected_total{seat="other",gate="rtb.bid-sanity",nbr="300"}`))
}

func TestShadowForwardsEverything(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(200, []byte(allBad)), "  action: shadow\n")
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 200, a.status)
	require.Equal(t, []string{"512/x1", "512/x2"}, bidIDs(t, a.body))
	require.Equal(t, "0", a.header.Get("X-Bidguard-Rejected"))
	require.EqualValues(t, 2, sc.metric(`bidguard_bids_total{seat="other",verdict="warned"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="bid"}`))
}

func TestSeatNonBid(t *testing.T) {
	type nonBid struct {
		ImpID      string `json:"impid"`
		StatusCode int    `json:"statuscode"`
		Ext        struct {
			Bidguard struct{ Gate, Reason, Bid_ID string } `json:"bidguard"`
		} `json:"ext"`
	}
	type body struct {
		ID      string            `json:"id"`
		SeatBid []json.RawMessage `json:"seatbid"`
		Ext     struct {
			SeatNonBid []struct {
				Seat   string   `json:"seat"`
				NonBid []nonBid `json:"nonbid"`
			} `json:"seatnonbid"`
			Other string `json:"other"`
		} `json:"ext"`
	}
	f := func(resp string, wantBids int) body {
		t.Helper()
		sc, _ := setup(t, testbidder.Answer(200, []byte(resp)), "  seatNonBid: true\n")
		a := sc.post("/bid", withTmax(t, 1000))
		require.Equal(t, 200, a.status, "rejections never lead to a bare 204 under seatNonBid")
		var got body
		require.NoError(t, json.Unmarshal(a.body, &got))
		require.Equal(t, "req-typical-1", got.ID)
		require.Len(t, got.SeatBid, wantBids)
		return got
	}
	got := f(allBad, 0)
	require.Len(t, got.Ext.SeatNonBid, 1)
	nb := got.Ext.SeatNonBid[0]
	require.Equal(t, "512", nb.Seat)
	require.Len(t, nb.NonBid, 2)
	require.Equal(t, "1", nb.NonBid[0].ImpID)
	require.Equal(t, 300, nb.NonBid[0].StatusCode)
	require.Equal(t, "rtb.bid-sanity", nb.NonBid[0].Ext.Bidguard.Gate)
	require.Equal(t, "bid missing price", nb.NonBid[0].Ext.Bidguard.Reason)
	require.Equal(t, "x1", nb.NonBid[0].Ext.Bidguard.Bid_ID)

	partial := `{"id":"req-typical-1","ext":{"other":"kept"},"seatbid":[{"seat":"512","bid":[
 {"id":"ok","impid":"1","price":1},{"id":"x2","impid":"nope","price":1}]}]}`
	got = f(partial, 1)
	require.Equal(t, "kept", got.Ext.Other, "existing ext keys are kept")
	require.Len(t, got.Ext.SeatNonBid, 1)
	require.Equal(t, "rtb.impid-match", got.Ext.SeatNonBid[0].NonBid[0].Ext.Bidguard.Gate)

	// Nothing rejected: a plain no-bid stays a 204.
	sc, _ := setup(t, testbidder.Answer(200, []byte(`{"id":"r","seatbid":[]}`)), "  seatNonBid: true\n")
	require.Equal(t, 204, sc.post("/bid", withTmax(t, 1000)).status)
}

// keysOf walks a JSON document and fails on an object with two keys equal
// under case folding (what a first-wins or case-insensitive parser would
// read differently).
func requireUniqueKeys(t *testing.T, doc []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.key {
				k := strings.ToLower(v)
				require.False(t, top.keys[k], "duplicate key %q in %s", v, doc)
				top.keys[k] = true
				top.key = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].key = true
		}
	}
}

func TestForwardedBodyHasOneValuePerKey(t *testing.T) {
	resp := `{"id":"req-typical-1","ID":"other","cur":"USD","seatbid":[{"seat":"512","SEAT":"999","bid":[
 {"id":"b1","impid":"1","price":9,"Price":1.25,"crid":"c","CRID":"c2","ext":{"a":1,"a":2}},
 {"id":"b2","impid":"2","price":1,"ImpID":"nope"}]}],"bidid":"x","BidId":"y"}`
	sc, _ := setup(t, testbidder.Answer(200, []byte(resp)), "")
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 200, a.status)
	requireUniqueKeys(t, a.body[:bytes.Index(a.body, []byte(`"ext"`))])
	var got struct {
		ID      string `json:"id"`
		BidID   string `json:"bidid"`
		SeatBid []struct {
			Seat string           `json:"seat"`
			Bid  []map[string]any `json:"bid"`
		} `json:"seatbid"`
	}
	require.NoError(t, json.Unmarshal(a.body, &got))
	require.Equal(t, "other", got.ID, "last key in document order, as encoding/json")
	require.Equal(t, "y", got.BidID)
	require.Len(t, got.SeatBid, 1)
	require.Equal(t, "999", got.SeatBid[0].Seat)
	require.Len(t, got.SeatBid[0].Bid, 1, "b2's last impid is unknown: removed")
	bid := got.SeatBid[0].Bid[0]
	require.Equal(t, 1.25, bid["price"])
	require.Equal(t, "c2", bid["crid"])
	require.Contains(t, string(a.body), `"ext":{"a":1,"a":2}`, "ext is kept byte for byte")
}

func TestOutboundRequest(t *testing.T) {
	f := func(extraUpstream, wantAE string) {
		t.Helper()
		b := testbidder.HTTP(t, testbidder.Answer(204, nil))
		cfg := fmt.Sprintf(`
upstreams:
  - {name: dsp, url: "%s/openrtb?x=1", path: /bid%s}
`, b.URL, extraUpstream)
		sc := startSidecar(t, compile(t, cfg, nil))
		// encoding/json takes the last case-variant key: tmax is 300.
		req := `{"TMAX":5,"id":"r1","Tmax":7,"imp":[{"id":"1"}],"tmax":300,"ext":{"keep":  [1, "t\"max"]}}`
		a := sc.post("/bid", []byte(req), "X-Openrtb-Version: 2.6", "Cookie: a=b", "X-Forwarded-For: 1.2.3.4",
			"Content-Type: application/json; charset=utf-8", "Accept-Encoding: br")
		require.Equal(t, 204, a.status)
		require.EqualValues(t, 1, b.Calls.Load())
		r := b.Last(t)
		body := r.Body
		require.Equal(t, "/openrtb", r.Path())
		require.Equal(t, "x=1", r.Query())
		require.Equal(t, "bidguard/test", r.Get(t, "User-Agent"))
		require.Equal(t, "application/json; charset=utf-8", r.Get(t, "Content-Type"))
		require.Equal(t, "2.6", r.Get(t, "X-Openrtb-Version"))
		require.Equal(t, wantAE, r.Get(t, "Accept-Encoding"))
		// End-to-end headers pass; the client's address is appended
		// (forward_test.go has every forwarding rule).
		require.Equal(t, "a=b", r.Get(t, "Cookie"))
		require.Equal(t, "1.2.3.4, 127.0.0.1", r.Get(t, "X-Forwarded-For"))
		requireUniqueKeys(t, body)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &m))
		var tmax int
		require.NoError(t, json.Unmarshal(m["tmax"], &tmax))
		// B = D - now - gateReserveMs = 300 - 5 - 7 - elapsed.
		require.LessOrEqual(t, tmax, 288)
		require.GreaterOrEqual(t, tmax, 10)
		require.Contains(t, string(body), `"ext":{"keep":  [1, "t\"max"]}`, "other members byte for byte")
	}
	f("", "")
	f(", acceptEncoding: gzip", "gzip")
}

func TestOneCallPerRequest(t *testing.T) {
	// The bidder drops the connection without answering: no retry.
	b := testbidder.HTTP(t, func(w http.ResponseWriter, _ *http.Request) {
		hj, _ := w.(http.Hijacker)
		c, _, err := hj.Hijack()
		if err == nil {
			_ = c.Close()
		}
	})
	sc := startSidecar(t, compile(t, fmt.Sprintf(baseConfig, b.URL), nil))
	for i := 1; i <= 3; i++ {
		a := sc.post("/bid", withTmax(t, 1000))
		require.Equal(t, 204, a.status)
		require.EqualValues(t, i, b.Calls.Load())
	}
	require.EqualValues(t, 3, sc.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="reset"}`))
}

func TestRoutingByExactPath(t *testing.T) {
	a := testbidder.HTTP(t, testbidder.Answer(204, nil))
	b := testbidder.HTTP(t, testbidder.Answer(204, nil))
	cfg := fmt.Sprintf(`
upstreams:
  - {name: a, url: "%s", path: /a}
  - {name: catchall, url: "%s", path: /}
`, a.URL, b.URL)
	sc := startSidecar(t, compile(t, cfg, nil))
	sc.post("/a", withTmax(t, 1000))
	sc.post("/a/", withTmax(t, 1000))
	sc.post("/x", withTmax(t, 1000))
	require.EqualValues(t, 1, a.Calls.Load())
	require.EqualValues(t, 2, b.Calls.Load())
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="a",outcome="no_bid"}`))
	require.EqualValues(t, 2, sc.metric(`bidguard_requests_total{upstream="catchall",outcome="no_bid"}`))
}

// TestRouteScan: route answers as the routes map does (the path, else
// "/"), whether it compares the few routes one by one or hashes the path.
func TestRouteScan(t *testing.T) {
	probes := []string{"", "/", "/a", "/a/", "/b", "/bid", "/bid2", "/r7", "/r8", "/r19", "/x", "/A"}
	for _, n := range []int{0, 1, 2, maxScanRoutes - 1, maxScanRoutes, maxScanRoutes + 1, 20} {
		for _, catchAll := range []bool{false, true} {
			st := &state{routes: map[string]*upstream{}}
			for i := range n {
				p := fmt.Sprintf("/r%d", i)
				if i == 0 && catchAll {
					p = "/"
				}
				st.routes[p] = &upstream{name: p, path: p}
			}
			st.index()
			require.Equal(t, n <= maxScanRoutes, st.few != nil, "%d routes", n)
			for _, p := range probes {
				want := st.routes[p]
				if want == nil {
					want = st.routes["/"]
				}
				require.Same(t, want, st.route([]byte(p)), "%d routes (catch-all %v), path %q", n, catchAll, p)
			}
		}
	}
}

// TestHeaderKeysCanonical: the keys bidguard sets with SetCanonical are
// those fasthttp's Set would write.
func TestHeaderKeysCanonical(t *testing.T) {
	for _, k := range [][]byte{keyConfig, keyRejected} {
		var h fasthttp.ResponseHeader
		h.SetNoDefaultContentType(true)
		h.Set(strings.ToLower(string(k)), "v")
		var keys []string
		for key := range h.All() {
			keys = append(keys, string(key))
		}
		require.Equal(t, []string{string(k)}, keys)
	}
}

func TestPeekTmax(t *testing.T) {
	f := func(body string, want int64, ok bool) {
		t.Helper()
		var rec members
		got, gotOK := peekTmax([]byte(body), &rec)
		require.Equal(t, ok, gotOK, body)
		require.Equal(t, want, got, body)
	}
	f(`{"id":"a","imp":[{"id":"1","ext":{"tmax":9}}],"tmax":120}`, 120, true)
	f(`{"id":"a"}`, 0, true)
	f(` { "tmax" : 80 , "TMAX":90 } `, 90, true)
	f(`{"t\u006dax":70}`, 70, true)
	f(`{"tmax":"70"}`, 0, false)
	f(`{"tmax":7e1}`, 0, false)
	f(`{"tmax":70.0}`, 0, false)
	f(`{"tmax":-3}`, -3, true)
	f(`{"tmax":0120}`, 0, false)
	f(`{"tmax":99999999999999999999}`, 0, false)
	f(`[1]`, 0, false)
	f(`{"id":"a"`, 0, false)
	f(`{"id" "a"}`, 0, false)
	f(``, 0, false)
}

// TestIsTmaxKey: isTmaxKey is jsonraw.KeyIs(raw, "tmax") on keys of every
// kind: ASCII case variants, the bytes next to the letters' cases, escapes,
// runes outside ASCII (those that fold to ASCII letters included).
func TestIsTmaxKey(t *testing.T) {
	keys := []string{"tmax", "TMAX", "tMaX", "tmaxx", "tma", "", "t\\u006dax", "\\u0074max", "\\u0054MAX", "tm\\u0041x",
		"tmax\\u0000", "\\n", "tmaſ", "tmaK", "ｔmax", "tmáx", "tmax ", " tmax"}
	for _, a := range []byte{'t', 'T', 'T' ^ 0x80, 't' + 1, 'T' - 1, '4', 0x14} {
		for _, x := range []byte{'x', 'X', 'x' ^ 0x20 ^ 0x80, 'x' - 1, 'X' + 1, '8', 0x18} {
			keys = append(keys, string([]byte{a, 'm', 'a', x}), string([]byte{'t', a ^ 't' ^ 'm', 'a', x}))
		}
	}
	for _, k := range keys {
		raw := []byte(k)
		require.Equal(t, jsonraw.KeyIs(raw, "tmax"), isTmaxKey(raw, bytes.IndexByte(raw, '\\') >= 0), "%q", k)
	}
}

// BenchmarkPeekTmax reads the tmax of the typical request, as the exchange
// sends it (compact) and indented: the walk over every top-level member.
func BenchmarkPeekTmax(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"compact", withTmax(b, 1000)}, {"indented", readFile(b, "typical-request.json")}} {
		b.Run(c.name, func(b *testing.B) {
			var rec members
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if _, ok := peekTmax(c.body, &rec); !ok || !rec.ok {
					b.Fatal("no tmax")
				}
			}
		})
	}
}

// refPeekTmax is peekTmax as it was, through jsonraw's member iterator: the
// reference of TestPeekTmaxReference and FuzzPeekTmax.
func refPeekTmax(body []byte, rec *members) (tmax int64, ok bool) {
	rec.ok, rec.n = false, 0
	m, isObj := jsonraw.Object(body)
	if !isObj {
		return 0, false
	}
	fits := len(body) <= math.MaxInt32
	for {
		k, v, more := m.Next()
		if !more {
			ok = m.Complete()
			rec.ok = ok && fits
			return tmax, ok
		}
		isTmax := jsonraw.KeyIs(k, "tmax")
		if isTmax {
			// Only a plain integer: the decoder rejects 7e1 and 70.0 for tmax.
			if tmax, ok = parseInt(v); !ok {
				return 0, false
			}
		}
		if rec.n == maxMembers {
			fits = false
		}
		if fits {
			s, e := m.Span()
			rec.spans[rec.n].s, rec.spans[rec.n].e, rec.spans[rec.n].tmax = int32(s), int32(e), isTmax
			rec.n++
		}
	}
}

// checkPeekTmax requires peekTmax to give what refPeekTmax gives, the
// recorded members included.
func checkPeekTmax(t *testing.T, body []byte) {
	t.Helper()
	var got, want members
	for k := range got.spans { // stale spans from an earlier body
		got.spans[k].s, want.spans[k].s = 7, 7
	}
	tmax, ok := peekTmax(body, &got)
	wantTmax, wantOK := refPeekTmax(body, &want)
	require.Equal(t, wantOK, ok, "%q", body)
	require.Equal(t, wantTmax, tmax, "%q", body)
	require.Equal(t, want, got, "%q", body)
}

func TestPeekTmaxReference(t *testing.T) {
	for _, body := range []string{
		`{"id":"a","imp":[{"id":"1","ext":{"tmax":9}}],"tmax":120}`, `{"id":"a"}`, ` { "tmax" : 80 , "TMAX":90 } `,
		`{"t\u006dax":70}`, `{"tmax":"70"}`, `{"tmax":7e1}`, `{"tmax":-3}`, `{"tmax":0120}`, `[1]`, `{"id":"a"`,
		`{"id" "a"}`, ``, `{}`, ` { } x`, `{,}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"tmax":5,`, `{"tmax":5,"x"`,
		`{"tmax":5,"x":}`, `{"tmax":5}}`, `{"a":"x\"}`, `{"a":[1,{"b":"]"}]}`, `{"a`, `{"a"`, `{"a":`, `{"a" :`,
		`{"tmax":1,"tmax":"x"}`, `{"tmax":"x","tmax":1}`, "{\n\"tmax\"\t:\r7\n}",
	} {
		checkPeekTmax(t, []byte(body))
	}
	checkPeekTmax(t, withTmax(t, 1000))
	checkPeekTmax(t, readFile(t, "typical-request.json"))
	var many strings.Builder
	many.WriteString(`{"tmax":1`)
	for i := range maxMembers + 1 {
		fmt.Fprintf(&many, `,"k%d":%d`, i, i)
	}
	checkPeekTmax(t, []byte(many.String()+`}`))
	checkPeekTmax(t, []byte(many.String()+`,"tmax":2}`))
}

// FuzzPeekTmax: peekTmax agrees with the iterator it replaced on any body.
func FuzzPeekTmax(f *testing.F) {
	for _, s := range []string{`{"id":"a","imp":[{"ext":{"tmax":9}}],"tmax":120}`, ` { "tmax" : 80 , "TMAX":90 } `,
		`{"t\u006dax":70}`, `{"tmax":7e1}`, `{"a":1,}`, `{"tmax":5,"x":}`, `{"a":"x\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkPeekTmax(t, body)
	})
}
