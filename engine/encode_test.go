package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/jsonraw"
)

// stdJSON is encoding/json with SetEscapeHTML(false), without the newline.
func stdJSON(t *testing.T, v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return strings.TrimSuffix(b.String(), "\n")
}

// judgeKeeping stands in for a policy run: bid i is kept when keep(i).
func judgeKeeping(e *Eval, keep func(i int) bool) {
	e.snap = &Snapshot{}
	e.Out = Outcome{Bids: make([]BidVerdict, len(e.In.Bids))}
	for i := range e.Out.Bids {
		if !keep(i) {
			e.Out.Bids[i].Rejection = Rejection{Name: "g"}
		}
	}
	e.finish()
}

// expectedBody is what encoding/json writes for the response holding only
// the kept bids, with each ext as the body must carry it (invalid UTF-8
// replaced).
func expectedBody(t *testing.T, e *Eval) string {
	resp := *e.In.Response
	clean := func(raw json.RawMessage) json.RawMessage {
		if raw == nil {
			return nil
		}
		return jsonraw.AppendValidUTF8(nil, raw)
	}
	resp.Ext = clean(resp.Ext)
	resp.SeatBid = nil
	k := 0
	for _, sb := range e.In.Response.SeatBid {
		var kept []openrtb2.Bid
		for _, b := range sb.Bid {
			if e.Out.Bids[k].Kept {
				b.Ext = clean(b.Ext)
				kept = append(kept, b)
			}
			k++
		}
		if len(kept) > 0 {
			sb.Bid, sb.Ext = kept, clean(sb.Ext)
			resp.SeatBid = append(resp.SeatBid, sb)
		}
	}
	return stdJSON(t, resp)
}

// checkBody checks the body against encoding/json's writing of the kept
// bids (docs/design.md step 6): valid UTF-8, one value per key and no
// case-variant duplicate in any object outside ext, and decoded by
// encoding/json to the same response (ext objects compared compacted).
// Every kept bid's ext is carried byte for byte; a bid the decoder found
// verbatim is carried as the bidder sent it, any other as encoding/json
// writes it.
func checkBody(t *testing.T, e *Eval) {
	t.Helper()
	body := e.Body()
	if e.Out.Action == NoBid {
		require.Nil(t, body)
		return
	}
	require.True(t, utf8.Valid(body), "%q", body)
	checkKeysOnce(t, body)
	var got, want openrtb2.BidResponse
	require.NoError(t, json.Unmarshal(body, &got), "%s", body)
	expected := expectedBody(t, e)
	require.NoError(t, json.Unmarshal([]byte(expected), &want))
	compactExts(t, &got)
	compactExts(t, &want)
	// encoding/json leaves an empty array out (omitempty); a verbatim bid
	// carries it: both mean no element.
	nilEmptySlices(reflect.ValueOf(&got).Elem())
	nilEmptySlices(reflect.ValueOf(&want).Elem())
	require.Equal(t, want, got, "%s", body)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, body))
	for i, b := range e.In.Bids {
		if !e.Out.Bids[i].Kept {
			continue
		}
		if len(b.Ext) > 0 {
			require.True(t, bytes.Contains(body, jsonraw.AppendValidUTF8(nil, b.Ext)), "ext of bid %d byte for byte", i)
		}
		if b.verbatim {
			require.True(t, bytes.Contains(body, b.Raw), "bid %d verbatim", i)
			continue
		}
		std := *b.Bid
		if std.Ext != nil {
			std.Ext = jsonraw.AppendValidUTF8(nil, std.Ext)
		}
		require.True(t, bytes.Contains(compact.Bytes(), []byte(stdJSON(t, std))), "bid %d as encoding/json writes it", i)
	}
}

// checkKeysOnce fails when an object of body outside ext holds two keys
// equal under case folding.
func checkKeysOnce(t *testing.T, body []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	var walk func(inExt bool)
	walk = func(inExt bool) {
		tok, err := dec.Token()
		require.NoError(t, err)
		switch tok {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				kt, err := dec.Token()
				require.NoError(t, err)
				k := kt.(string)
				if !inExt {
					for _, o := range keys {
						require.False(t, strings.EqualFold(o, k), "keys %q and %q in one object: %s", o, k, body)
					}
					keys = append(keys, k)
				}
				walk(inExt || k == "ext")
			}
			_, err = dec.Token()
			require.NoError(t, err)
		case json.Delim('['):
			for dec.More() {
				walk(inExt)
			}
			_, err = dec.Token()
			require.NoError(t, err)
		}
	}
	walk(false)
}

// nilEmptySlices sets every empty slice reachable from v to nil, ext
// objects aside.
func nilEmptySlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			nilEmptySlices(v.Elem())
		}
	case reflect.Slice:
		if v.Type() == rawMessageType {
			return
		}
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for i := 0; i < v.Len(); i++ {
			nilEmptySlices(v.Index(i))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			nilEmptySlices(v.Field(i))
		}
	}
}

// compactExts compacts every ext of r, so that two decodings compare
// equal whatever white space their exts held.
func compactExts(t *testing.T, r *openrtb2.BidResponse) {
	c := func(raw *json.RawMessage) {
		if *raw == nil {
			return
		}
		var b bytes.Buffer
		require.NoError(t, json.Compact(&b, *raw))
		*raw = b.Bytes()
	}
	c(&r.Ext)
	for i := range r.SeatBid {
		c(&r.SeatBid[i].Ext)
		for j := range r.SeatBid[i].Bid {
			c(&r.SeatBid[i].Bid[j].Ext)
		}
	}
}

func TestBodyMatchesEncodingJSON(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	doc := `{"id":"r<1>","bidid":"x","cur":"EUR","customdata":"c&d","nbr":2,"ext":{ "a" : [1, 2] },
		"seatbid":[{"seat":"s1","group":1,"ext":{"q":"` + "\xff" + `"},"bid":[
			{"id":"b1","impid":"1","price":1.5e-7,"adm":"<a href=\"x\">&amp;</a>\u2028","w":300,"h":250,"attr":[1,2],"cat":[],"ext":{ "k" : "v" }},
			{"id":"b2","impid":"2","ext":null},
			{"id":"b3","impid":"3","price":-0,"adomain":["a.com"],"mtype":4,"dur":-1,"ext":{"bad":"` + "\xed\xa0\x80" + `"}}]},
		{"seat":"s2","bid":[{"id":"b4","impid":"1","price":1e21}]}]}`
	require.NoError(t, e.DecodeResponse([]byte(doc), 1000))
	for _, keep := range []func(int) bool{
		func(int) bool { return true },
		func(i int) bool { return i != 1 },
		func(i int) bool { return i == 3 },
		func(i int) bool { return i == 0 || i == 2 },
	} {
		judgeKeeping(e, keep)
		checkBody(t, e)
	}
	judgeKeeping(e, func(int) bool { return false })
	require.Nil(t, e.Body())
}

// fillValue sets every field reachable from v to a non-zero value.
func fillValue(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strings.Repeat("é", *n%3))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n%100 + 1))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), n)
	case reflect.Slice:
		if v.Type() == rawMessageType {
			v.SetBytes([]byte(`{"n":1}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fillValue(v.Index(0), n)
		fillValue(v.Index(1), n)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillValue(v.Field(i), n)
		}
	}
}

// TestBodyEveryField: with every field of the response types set, the body
// is still what encoding/json writes (no field of the model is missed).
func TestBodyEveryField(t *testing.T) {
	var full openrtb2.BidResponse
	n := 0
	fillValue(reflect.ValueOf(&full).Elem(), &n)
	doc := stdJSON(t, full)
	e := AcquireEval()
	defer ReleaseEval(e)
	require.NoError(t, e.DecodeResponse([]byte(doc), 1000))
	require.Equal(t, full, *e.In.Response, "decodes back to every field")
	judgeKeeping(e, func(int) bool { return true })
	require.Equal(t, doc, string(e.Body()))
}

// FuzzBodyDifferential: for any response the decoder accepts and any choice
// of kept bids, the body decodes to encoding/json's, with the properties of
// checkBody.
func FuzzBodyDifferential(f *testing.F) {
	seedsFrom(f, "testdata/corpus/bid-response-*.json", "")
	seedsFrom(f, "testdata/typical-response.json", "")
	for _, s := range trickyDocuments {
		f.Add([]byte(s))
	}
	e := AcquireEval()
	f.Fuzz(func(t *testing.T, data []byte) {
		if e.DecodeResponse(data, 1000) != nil {
			return
		}
		for _, mask := range []uint64{^uint64(0), 0x5555555555555555, 0x2} {
			judgeKeeping(e, func(i int) bool { return mask>>(i%64)&1 == 1 })
			checkBody(t, e)
		}
	})
}

func TestSeatNonBidBody(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	require.NoError(t, e.DecodeRequest([]byte(`{"id":"req-1","imp":[{"id":"1"},{"id":"2"}]}`)))
	require.NoError(t, e.DecodeResponse([]byte(`{"id":"req-1","ext":{"x":1,"SeatNonBid":2,"x":3,"\u0078":4,"y":"`+"\xff"+`"},
		"seatbid":[{"seat":"a","bid":[{"id":"b1","impid":"1"},{"id":"b2","impid":"2"}]},{"seat":"b","bid":[{"id":"b3","impid":"1"}]},{"seat":"a","bid":[{"id":"b4","impid":"2"}]}]}`), 1000))
	e.snap = &Snapshot{SeatNonBid: true}
	bids := make([]BidVerdict, 4)
	for i := 1; i < 4; i++ {
		bids[i].Rejection = Rejection{Name: "g"}
	}
	e.Out = Outcome{Bids: bids, Rejected: []Hit{
		{Seat: "a", BidID: "b2", ImpID: "2", Gate: "g1", Reason: `r "1"`, NBR: 300, Bid: 1},
		{Seat: "b", BidID: "b3", ImpID: "1", Gate: "g2", Reason: "r2", NBR: 301, Bid: 2},
		{Seat: "a", BidID: "b4", ImpID: "2", Gate: "g1", Reason: "r3", NBR: 300, Bid: 3},
	}}
	e.finish()
	require.Equal(t, Filter, e.Out.Action)
	body := e.Body()
	require.Equal(t, `{"id":"req-1","seatbid":[{"bid":[{"id":"b1","impid":"1","price":0}],"seat":"a"}],`+
		`"ext":{"\u0078":4,"y":"\ufffd","seatnonbid":[`+
		`{"seat":"a","nonbid":[{"impid":"2","statuscode":300,"ext":{"bidguard":{"bid_id":"b2","gate":"g1","reason":"r \"1\""}}},`+
		`{"impid":"2","statuscode":300,"ext":{"bidguard":{"bid_id":"b4","gate":"g1","reason":"r3"}}}]},`+
		`{"seat":"b","nonbid":[{"impid":"1","statuscode":301,"ext":{"bidguard":{"bid_id":"b3","gate":"g2","reason":"r2"}}}]}]}}`, string(body))

	// A response-level rejection: one entry per request imp under every
	// seatbid, and no bid left.
	clear(bids)
	e.Out = Outcome{Bids: bids, Rejected: []Hit{{Gate: "rtb.response-id", Reason: "response id does not match request id", NBR: 300, Bid: -1}},
		Response: Judgement{Rejection: Rejection{Name: "rtb.response-id", Reason: "response id does not match request id", NBR: 300}}}
	e.finish()
	require.Equal(t, NoBid, e.Out.Action)
	var got struct {
		ID      string            `json:"id"`
		SeatBid []json.RawMessage `json:"seatbid"`
		Ext     struct {
			SeatNonBid []struct {
				Seat   string `json:"seat"`
				NonBid []struct {
					ImpID string `json:"impid"`
				} `json:"nonbid"`
			} `json:"seatnonbid"`
		} `json:"ext"`
	}
	require.NoError(t, json.Unmarshal(e.Body(), &got), "%s", e.Body())
	require.Equal(t, "req-1", got.ID)
	require.NotNil(t, got.SeatBid)
	require.Empty(t, got.SeatBid)
	require.Len(t, got.Ext.SeatNonBid, 2)
	require.Equal(t, "a", got.Ext.SeatNonBid[0].Seat)
	require.Len(t, got.Ext.SeatNonBid[0].NonBid, 4, "two seatbids of seat a, two imps each")
	require.Len(t, got.Ext.SeatNonBid[1].NonBid, 2)
}

// TestBodyCarriesCleanBidsVerbatim: a bid is copied as the bidder sent it
// only when its bytes decode to the decoded bid under any conforming
// parser; each way of breaking that sends the bid re-encoded.
func TestBodyCarriesCleanBidsVerbatim(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	for _, c := range []struct {
		bid      string
		verbatim bool
	}{
		{`{"id":"b","impid":"1","price":1.50,"adm":"<a href=\"x\">\u00e9</a>","cat":[],"w":0,"ext":{ "k" : 1 }}`, true},
		{"{ \"id\" : \"b\" ,\n \"impid\":\"1\", \"price\": 1e-2 }", true},
		{`{"id":"b","impid":"1","price":1,"unknown":2}`, false}, // a field outside openrtb2
		{`{"id":"b","impid":"1","PRICE":1}`, false},             // a case variant
		{`{"id":"b","impid":"1","price":1,"price":2}`, false},   // a repeated key
		{`{"id":"b","impid":"1","price":1,"nurl":null}`, false}, // a null
		{`{"id":"b","impid":"1","price":1,"cat":["a",null]}`, false},
		{`{"id":"b","impid":"1","price":1,"adm":"\ud800"}`, false}, // a lone surrogate
		{`{"id":"b","impid":"1","price":1,"adm":"\ud83d\ude00"}`, false},
		{`{"id":"b","impid":"1","price":1,"adm":"` + "\xff" + `"}`, false}, // invalid UTF-8
		{`{"id":"b","impid":"1"}`, false},                                  // no price: encoding/json writes one
		{`{"impid":"1","price":1}`, false},                                 // no id
		{`{"id":"b","imp\u0069d":"1","price":1}`, false},                   // an escaped key
	} {
		doc := `{"id":"r","seatbid":[{"seat":"s","bid":[` + c.bid + `]}]}`
		require.NoError(t, e.DecodeResponse([]byte(doc), 1000), c.bid)
		require.Equal(t, c.verbatim, e.In.Bids[0].verbatim, c.bid)
		judgeKeeping(e, func(int) bool { return true })
		checkBody(t, e)
		require.Equal(t, c.verbatim, bytes.Contains(e.Body(), []byte(c.bid)), c.bid)
	}
}
