package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

// The reference decoder: encoding/json on the same wire types, with the
// decode rules the engine applied before it had a decoder of its own
// (depth, the bid request look-alike, a null bid), plus the overflow rule
// and the empty response of docs/gates.md "Decoding". The differential
// tests hold the engine's decoder to it: same accept/reject, same values.

// refValid is the syntax, depth and overflow rule, decided with
// encoding/json alone.
func refValid(data []byte) bool {
	if !json.Valid(data) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				if depth++; depth > MaxDepth {
					return false
				}
			} else {
				depth--
			}
		case json.Number:
			if _, err := strconv.ParseFloat(string(v), 64); err != nil {
				return false
			}
		}
	}
}

type refRequest struct {
	req     openrtb2.BidRequest
	regsDSA json.RawMessage
}

func refDecodeRequest(data []byte) (*refRequest, error) {
	if !refValid(data) {
		return nil, errors.New("invalid")
	}
	var w wireRequest
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	r := &refRequest{req: w.BidRequest}
	if w.Regs != nil {
		regs := w.Regs.Regs
		r.req.Regs = &regs
		r.regsDSA = w.Regs.DSA
	}
	return r, nil
}

type refBid struct {
	seatIndex, bidIndex int
	seat                string
	hasPrice, badUTF8   bool
	raw                 string
}

type refResponse struct {
	resp openrtb2.BidResponse
	bids []refBid
	info ResponseInfo
}

func refDecodeResponse(data []byte, maxBids int) (*refResponse, error) {
	r := &refResponse{}
	// JSON's white space only (bytes.TrimSpace would also take a vertical
	// tab, a form feed, U+0085 and U+00A0: a document encoding/json
	// refuses, not a no-bid).
	trimmed := bytes.Trim(data, " \t\n\r")
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		r.info.Empty = true
		return r, nil
	}
	if !refValid(data) {
		return nil, errors.New("invalid")
	}
	var w wireResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	if w.SeatBid == nil && w.Imp != nil {
		return nil, ErrLooksLikeRequest
	}
	r.resp = w.BidResponse
	r.resp.SeatBid = nil
	r.info.Empty = isEmptyObject(trimmed)
	if w.SeatBid != nil {
		for _, sb := range *w.SeatBid {
			r.info.BidCount += len(sb.Bid)
		}
	}
	if maxBids > 0 && r.info.BidCount > maxBids {
		r.info.TooManyBids = true
		return r, nil
	}
	// encoding/json on the model itself: every bid is decoded, those a
	// later key replaces too, and a type error in any of them rejects the
	// document.
	var model openrtb2.BidResponse
	if err := json.Unmarshal(data, &model); err != nil {
		return nil, err
	}
	if w.SeatBid == nil {
		return r, nil
	}
	r.resp.SeatBid = make([]openrtb2.SeatBid, len(*w.SeatBid))
	for i, sb := range *w.SeatBid {
		r.resp.SeatBid[i] = sb.SeatBid
		decoded := make([]openrtb2.Bid, len(sb.Bid))
		for j, raw := range sb.Bid {
			var wb wireBid
			if err := json.Unmarshal(raw, &wb); err != nil {
				return nil, err
			}
			if bytes.Equal(raw, []byte("null")) {
				return nil, errors.New("null bid")
			}
			decoded[j] = wb.Bid
			if wb.Price != nil {
				decoded[j].Price = *wb.Price
			}
			r.bids = append(r.bids, refBid{seatIndex: i, bidIndex: j, seat: sb.Seat, hasPrice: wb.Price != nil,
				badUTF8: !utf8.Valid(raw), raw: string(raw)})
		}
		r.resp.SeatBid[i].Bid = decoded
	}
	return r, nil
}

// sameCaps compares the capacities of every slice in a and b (except
// json.RawMessage, which encoding/json copies): the decoder reproduces
// encoding/json's capacities, so that stale elements come back alike.
func sameCaps(t *testing.T, path string, a, b reflect.Value) {
	switch a.Kind() {
	case reflect.Pointer:
		if !a.IsNil() && !b.IsNil() {
			sameCaps(t, path, a.Elem(), b.Elem())
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			sameCaps(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	case reflect.Slice:
		if a.Type() == rawMessageType {
			return
		}
		require.Equal(t, a.Cap(), b.Cap(), "capacity of %s", path)
		for i := 0; i < a.Len() && i < b.Len(); i++ {
			sameCaps(t, fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
		}
	}
}

// checkRequest decodes data with both decoders and compares.
func checkRequest(t *testing.T, e *Eval, data []byte) {
	ref, refErr := refDecodeRequest(data)
	err := e.DecodeRequest(data)
	require.Equal(t, refErr == nil, err == nil, "accept/reject of %q: reference %v, engine %v", data, refErr, err)
	if err != nil {
		require.Nil(t, e.In.Request)
		return
	}
	require.Equal(t, ref.req, *e.In.Request, "%q", data)
	require.Equal(t, string(ref.regsDSA), string(e.In.RegsDSA), "%q", data)
	require.Equal(t, ref.regsDSA == nil, e.In.RegsDSA == nil)
	sameCaps(t, "request", reflect.ValueOf(ref.req), reflect.ValueOf(*e.In.Request))
}

// checkResponse decodes data with both decoders and compares.
func checkResponse(t *testing.T, e *Eval, data []byte, maxBids int) {
	ref, refErr := refDecodeResponse(data, maxBids)
	err := e.DecodeResponse(data, maxBids)
	require.Equal(t, refErr == nil, err == nil, "accept/reject of %q: reference %v, engine %v", data, refErr, err)
	if err != nil {
		require.Nil(t, e.In.Response)
		require.Empty(t, e.In.Bids)
		return
	}
	require.Equal(t, ref.info, e.Info(), "%q", data)
	require.Equal(t, ref.info.Empty, e.In.ResponseEmpty)
	require.Equal(t, ref.resp, *e.In.Response, "%q", data)
	require.Len(t, e.In.Bids, len(ref.bids))
	for k, rb := range ref.bids {
		b := e.In.Bids[k]
		got := refBid{seatIndex: b.SeatIndex, bidIndex: b.BidIndex, seat: b.Seat, hasPrice: b.HasPrice, badUTF8: b.BadUTF8, raw: string(b.Raw)}
		require.Equal(t, rb, got, "bid %d of %q", k, data)
		require.Same(t, &e.In.Response.SeatBid[b.SeatIndex].Bid[b.BidIndex], b.Bid)
	}
	checkBidsAgreeWithBefore(t, e, data)
}

// trickyDocuments are seeds for both decoders: duplicates, case variants,
// escaped keys, nulls, stale elements of repeated arrays, overflow, deep
// nesting, invalid UTF-8.
var trickyDocuments = []string{
	`{"id":"1","seatbid":[{"bid":[{"id":"x","impid":"1","price":1,"PRICE":-1,"price":2}]}]}`,
	`{"id":"1","seatbid":[{"seat":"a","bid":[{"id":"x"}]}],"SeatBid":[{"bid":[{"id":"y","price":null}]}]}`,
	`{"id":"1","seatbid":[{"seat":"a","bid":[{"id":"1"},{"id":"2"}]},{"seat":"b","group":1,"bid":[]}],"seatbid":[{"bid":[{"id":"3"}]}],"seatbid":[{},{"ext":null}]}`,
	`{"id":"1","imp":[{"id":"1","tagid":"t","banner":{"w":1,"format":[{"w":1},{"w":2}]}},{"id":"2"}],"imp":[{"id":"3","banner":{"format":[{"h":5}]}}],"imp":[{},{"secure":1}]}`,
	`{"id":"1","bcat":["a","b","c"],"bcat":["d"],"bcat":["e",null,null],"badv":[],"bapp":null,"cur":["USD"],"cur":[]}`,
	`{"\u0069d":"1","ſeatbid":[{"bid":[{"\u0069d":"x","ımpid":"1","impıd":"2","pri\u0063e":3}]}],"cu\u0072":"EUR"}`,
	`{"id":"1","regs":{"coppa":1,"dsa":{"dsarequired":3}},"REGS":{"gdpr":1,"DSA":null},"regs":null,"regs":{"ext":{"x":1}}}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","ext":null,"adm":"` + "\xff\xed\xa0\x80" + `","ext":{"a":"` + "\xc3" + `"}}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","adm":"\ud800\udc00\ud800x\\\"\u2028"}]}],"nbr":1,"nbr":null}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","w":1,"w":null,"attr":[1,2],"attr":[3]}]}],"imp":[]}`,
	`{"id":"1","seatbid":null,"imp":{}}`,
	`{"id":"1","seatbid":[{"bid":null}],"ext":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}`,
	`{"id":"1","ext":{"x":1e308,"y":-1e-400,"z":12345678901234567890}}`,
	`{"id":"1","tmax":9223372036854775807,"at":-2147483648,"imp":[{"id":"1","rwdd":127,"instl":-128}]}`,
	`{"id":"1","imp":[{"id":"1","rwdd":128}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"}]},{"bid":[{"id":"b"},{"id":"c"}]}],"seatbid":[{"bid":[{"id":"d"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a","cat":["x"],"cat":"y"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a","ext":{"dsa":1,"dsa":{"behalf":"b"}}}]}],"ext":{"seatnonbid":1}}`,
	// Bids a later key replaces are decoded by encoding/json all the same:
	// a type error in one rejects the document (a repeated "bid", a case
	// variant, a shadowed array, a repeated "seatbid" that is shorter or
	// null, at every level); a null there is no error.
	`{"id":"1","seatbid":[{"bid":["x"],"bid":[{"id":"b","impid":"1","price":1}]}]}`,
	`{"id":"1","seatbid":[{"BID":["IAB9-9"],"bid":[{"id":"b","impid":"1","price":1}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"impid":1}],"bid":[{"id":"b","impid":"1","price":1}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"},{"id":"b","ext":{},"w":1.5}],"bid":null}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"}]},{"bid":[{"cat":"IAB1"}]}],"seatbid":[{"bid":[{"id":"c"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"price":"1"}]}],"seatbid":null}`,
	`{"id":"1","seatbid":[{"bid":[{"price":"1"}]}],"SEATBID":null,"imp":[]}`,
	`{"id":"1","seatbid":[{"bid":[null,{"id":"a"}],"bid":[{"id":"b"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"}],"Bid":[{"id":"b"}],"bId":[{"id":"c","impid":2}]},{"bid":[]}]}`,
	` {} `, `null`, ``, "\t", `[]`, `"x"`, `1`, `true`, `{"id":1}`, `{"id":"1"} x`,
}

func seedsFrom(f *testing.F, glob string, key string) {
	paths, err := filepath.Glob(glob)
	require.NoError(f, err)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(f, err)
		if key == "" {
			f.Add(data)
			continue
		}
		var pair map[string]json.RawMessage
		if json.Unmarshal(data, &pair) == nil && pair[key] != nil {
			f.Add([]byte(pair[key]))
		}
	}
}

// FuzzDecodeRequestDifferential: the engine decodes every bid request as
// the reference does (same accept/reject, same values).
func FuzzDecodeRequestDifferential(f *testing.F) {
	seedsFrom(f, "testdata/corpus/bid-request-*.json", "")
	seedsFrom(f, "testdata/typical-request.json", "")
	seedsFrom(f, "../gates/testdata/*/*.json", "request")
	for _, s := range trickyDocuments {
		f.Add([]byte(s))
	}
	e := AcquireEval()
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRequest(t, e, data)
	})
}

// FuzzDecodeResponseDifferential: the same for bid responses, with a small
// bids limit so that the count rule is exercised too.
func FuzzDecodeResponseDifferential(f *testing.F) {
	seedsFrom(f, "testdata/corpus/bid-response-*.json", "")
	seedsFrom(f, "testdata/typical-response.json", "")
	seedsFrom(f, "../gates/testdata/*/*.json", "response")
	for _, s := range trickyDocuments {
		f.Add([]byte(s))
	}
	e := AcquireEval()
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResponse(t, e, data, 1000)
		checkResponse(t, e, data, 2)
	})
}

// TestCorpusReplay replays the public OpenRTB samples and every golden pair
// through both decoders in one process, each message decoded twice into one
// reused Eval.
func TestCorpusReplay(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	n := 0
	replay := func(glob, key string, check func(data []byte)) {
		paths, err := filepath.Glob(glob)
		require.NoError(t, err)
		require.NotEmpty(t, paths, glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			if key != "" {
				var pair map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(data, &pair), p)
				if data = pair[key]; data == nil {
					continue
				}
			}
			check(data)
			check(data)
			n++
		}
	}
	req := func(data []byte) { checkRequest(t, e, data) }
	resp := func(data []byte) { checkResponse(t, e, data, 1000) }
	replay("testdata/corpus/bid-request-*.json", "", req)
	replay("testdata/corpus/bid-response-*.json", "", resp)
	replay("../gates/testdata/*/*.json", "request", req)
	replay("../gates/testdata/*/*.json", "response", resp)
	for _, s := range trickyDocuments {
		req([]byte(s))
		resp([]byte(s))
	}
	t.Logf("%d documents", n)
}
