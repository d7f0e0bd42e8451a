package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/jsonraw"
)

// decodeResp decodes doc as a response in a fresh Eval (released by the
// test's cleanup).
func decodeResp(t *testing.T, doc string, maxBids int) (*Eval, error) {
	t.Helper()
	e := AcquireEval()
	t.Cleanup(func() { ReleaseEval(e) })
	return e, e.DecodeResponse([]byte(doc), maxBids)
}

func TestDecodeResponseErrors(t *testing.T) {
	f := func(doc, msg string) {
		t.Helper()
		e, err := decodeResp(t, doc, 1000)
		require.Error(t, err, doc)
		require.Contains(t, err.Error(), msg, doc)
		require.Nil(t, e.In.Response, "a half-decoded response is never judged")
		require.Empty(t, e.In.Bids)
	}
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":"1","price":"1.5"}]}]}`, "seatbid[0].bid[0].price: wrong JSON type string (offset 59)")
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":7,"price":1}]}]}`, "seatbid[0].bid[0].impid: wrong JSON type number 7")
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":"1","price":1e400}]}]}`, "number 1e400 overflows float64")
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":"1","ext":{"x":[-1e309]}}]}]}`, "overflows float64")
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":"1","price":NaN}]}]}`, "malformed JSON")
	f(`{"id":"1","seatbid":[]} {}`, "malformed JSON")
	f(`{"id":"1","imp":[{"id":"1"}]}`, "looks like a bid request")
	f(`{"id":"1","IMP":null,"seatbid":null}`, "looks like a bid request")
	f(strings.Repeat("[", 1001)+strings.Repeat("]", 1001), "nesting deeper than 1000")
	f(`{"id":"1","seatbid":[{"bid":[null]}]}`, "seatbid[0].bid[0] is null")
	f(`{"id":"1","seatbid":[{"bid":[{},null]}]}`, "seatbid[0].bid[1] is null")
	f(`{"id":"1","seatbid":[{"bid":[1]}]}`, "seatbid[0].bid[0]: wrong JSON type number 1")
	f(`[]`, "value: wrong JSON type array")
	f(`{"id":"1","seatbid":[{"group":128,"bid":[]}]}`, "seatbid[0].group: wrong JSON type number 128")
	f(`{"id":"1","seatbid":[{"bid":[{"w":1.0}]}]}`, "w: wrong JSON type number 1.0")
	f(`{"id":"1","seatbid":[{"bid":[{"w":1e2}]}]}`, "w: wrong JSON type number 1e2")
	f(`{"id":"1","seatbid":[{"bid":[{"w":9223372036854775808}]}]}`, "wrong JSON type number")
	// A duplicate key whose earlier value has the wrong type: encoding/json
	// notes the first type error and rejects the document.
	f(`{"id":"1","seatbid":[{"bid":[{"price":"1","price":1}]}]}`, "price: wrong JSON type string")
	f(`{"id":"1","cur":1,"cur":"USD","seatbid":[]}`, "cur: wrong JSON type number")
	// The same for bids a later key replaces: encoding/json decodes them
	// into the model before the later value replaces them.
	valid := `[{"id":"b","impid":"1","price":1}]`
	f(`{"id":"1","seatbid":[{"bid":["x"],"bid":`+valid+`}]}`, "seatbid[].bid[0]: wrong JSON type string (offset 29)")
	f(`{"id":"1","seatbid":[{"BID":["IAB9-9"],"bid":`+valid+`}]}`, "seatbid[].bid[0]: wrong JSON type string")
	f(`{"id":"1","seatbid":[{"bid":[{"impid":1}],"bid":`+valid+`}]}`, "seatbid[].bid[0].impid: wrong JSON type number 1")
	f(`{"id":"1","seatbid":[{"bid":`+valid+`},{"bid":[{},{"w":"1"}]}],"seatbid":[{"bid":`+valid+`}]}`, "seatbid[].bid[1].w: wrong JSON type string")
	f(`{"id":"1","seatbid":[{"bid":[{"price":"1"}]}],"seatbid":null}`, "seatbid[].bid[0].price: wrong JSON type string")
	f(`{"id":"1","seatbid":[{"bid":[{"price":"1"}],"bid":[]}]}`, "seatbid[].bid[0].price: wrong JSON type string")
}

// TestDecodeResponseReplacedBids: bids a later key replaces are checked,
// not judged; a null among them is no error (encoding/json leaves the
// element alone), and too many bids still decides before any is decoded.
func TestDecodeResponseReplacedBids(t *testing.T) {
	e, err := decodeResp(t, `{"id":"1","seatbid":[{"bid":[null,{"id":"a"}],"BID":[{"id":"b","impid":"1"}]},{"bid":[{"id":"c"}]}],"seatbid":[{}]}`, 1000)
	require.NoError(t, err)
	require.Len(t, e.In.Bids, 1)
	require.Equal(t, "b", e.In.Bids[0].ID)

	e, err = decodeResp(t, `{"id":"1","seatbid":[{"bid":[{"w":"x"}],"bid":[{"id":"a"},{"id":"b"},{"id":"c"}]}]}`, 2)
	require.NoError(t, err)
	require.True(t, e.Info().TooManyBids)
	require.Empty(t, e.In.Bids)
}

func TestDecodeResponseRecords(t *testing.T) {
	e, err := decodeResp(t, `{"id":"1","seatbid":[{"seat":"s","bid":[
		{"id":"a","impid":"1"},
		{"id":"b","impid":"1","price":null},
		{"id":"c","impid":"1","price":0},
		{"id":"d","impid":"1","price":2,"PRICE":3,"adm":"`+"\xff"+`"},
		{"id":"e","impid":"1","price":1,"price":4},
		{"id":"f","impid":"1","price":1,"price":null}]}]}`, 1000)
	require.NoError(t, err)
	require.Equal(t, 6, e.Info().BidCount)
	bids := e.In.Bids
	require.Len(t, bids, 6)
	has := []bool{false, false, true, true, true, false}
	for i, b := range bids {
		require.Equal(t, has[i], b.HasPrice, b.ID)
		require.Equal(t, "s", b.Seat)
		require.Equal(t, i == 3, b.BadUTF8, b.ID)
		require.Equal(t, "\uFFFD", bids[3].AdM, "invalid UTF-8 decodes to U+FFFD as in encoding/json")
		require.Same(t, &e.In.Response.SeatBid[0].Bid[i], b.Bid)
	}
	require.Equal(t, 3.0, bids[3].Price, "case-variant keys: the last one wins")
	require.Equal(t, 4.0, bids[4].Price, "duplicate keys: the last one wins")
	require.Equal(t, 0.0, bids[5].Price, "a null price is a missing price")
	require.Equal(t, `{"id":"a","impid":"1"}`, string(bids[0].Raw))
}

func TestDecodeResponseEmptyAndLimits(t *testing.T) {
	for _, doc := range []string{``, " \n\t", `null`, ` { } `, "\r\n null \t", "{\r\n}"} {
		e, err := decodeResp(t, doc, 1000)
		require.NoError(t, err, "%q is a no-bid", doc)
		require.True(t, e.Info().Empty, doc)
		require.True(t, e.In.ResponseEmpty, doc)
		require.NotNil(t, e.In.Response)
	}
	// White space JSON does not allow (encoding/json refuses these): a
	// broken document, not a no-bid.
	for _, doc := range []string{"\fnull", "\vnull", "null\u00a0", "\u0085", "{\f}"} {
		_, err := decodeResp(t, doc, 1000)
		require.Error(t, err, "%q", doc)
	}
	e, err := decodeResp(t, `{"id":"x"}`, 1000)
	require.NoError(t, err)
	require.False(t, e.Info().Empty)
	// Depth exactly 1000 is accepted.
	_, err = decodeResp(t, `{"id":"1","ext":`+strings.Repeat("[", 999)+strings.Repeat("]", 999)+`}`, 1000)
	require.NoError(t, err)
	// Brackets inside strings do not count.
	_, err = decodeResp(t, `{"id":"`+strings.Repeat("[", 2000)+`"}`, 1000)
	require.NoError(t, err)

	// The count decides before any bid is decoded: bad bids do not matter.
	e, err = decodeResp(t, `{"id":"1","seatbid":[{"bid":[{"id":"a"},{"price":"x"}]},{"bid":[null]}]}`, 2)
	require.NoError(t, err)
	require.True(t, e.Info().TooManyBids)
	require.Equal(t, 3, e.Info().BidCount)
	require.Empty(t, e.In.Bids)
}

func TestDecodeRequestStrictTypes(t *testing.T) {
	f := func(doc string, ok bool) {
		t.Helper()
		e := AcquireEval()
		defer ReleaseEval(e)
		err := e.DecodeRequest([]byte(doc))
		if ok {
			require.NoError(t, err, doc)
			require.NotNil(t, e.In.Request)
		} else {
			require.Error(t, err, doc)
			require.Nil(t, e.In.Request)
		}
	}
	f(`{"id":"1","imp":[{"id":"1"}],"tmax":100}`, true)
	f(`{"id":"1","imp":[{"id":"1"}],"tmax":"100"}`, false)
	f(`{"id":"1","imp":[{"id":"1"}],"tmax":100.5}`, false)
	f(`{"id":"1","imp":[{"id":"1"}],"regs":{"coppa":true}}`, false)
	f(`{"id":"1","imp":[{"id":"1"}],"unknown":{"x":[1,2]},"at":99}`, true)
	f(`{"id":"1","imp":[{"id":"1"}],"unknown":{"x":[1e999]}}`, false)
	f(`{"id":"1","imp":[{"id":"1","banner":{"pos":42}}]}`, true)
	f(`{"id":"1"`, false)
	f(``, false)
	f(`null`, true)
}

func TestDecodeRequestRegsDSA(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	require.NoError(t, e.DecodeRequest([]byte(`{"id":"1","regs":{"coppa":1,"dsa":{"dsarequired":3}},"REGS":{"gdpr":1}}`)))
	require.Equal(t, `{"dsarequired":3}`, string(e.In.RegsDSA))
	require.NotNil(t, e.In.Request.Regs)
	require.EqualValues(t, 1, e.In.Request.Regs.COPPA, "a repeated object merges into the first, as in encoding/json")
	require.NotNil(t, e.In.Request.Regs.GDPR)
}

// TestDecodeRepeatedKeys pins encoding/json's handling of repeated keys,
// which the decoder reproduces (FuzzDecodeRequestDifferential checks it
// against encoding/json itself).
func TestDecodeRepeatedKeys(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	require.NoError(t, e.DecodeRequest([]byte(`{"id":"1",
		"bcat":["a","b","c"],"bcat":["d"],"bcat":["e",null,null],
		"imp":[{"id":"1","tagid":"t","banner":{"w":1}}],"IMP":[{"id":"2","banner":{"h":2}}],
		"site":{"id":"s","page":"p"},"site":{"id":"s2"},
		"cur":["USD"],"cur":[],"wseat":["x"],"wseat":null}`)))
	r := e.In.Request
	require.Equal(t, []string{"e", "b", "c"}, r.BCat, "a repeated array keeps its backing array: nulls leave the stale elements")
	require.Len(t, r.Imp, 1)
	require.Equal(t, "2", r.Imp[0].ID)
	require.Equal(t, "t", r.Imp[0].TagID, "array elements decode into the earlier ones")
	require.EqualValues(t, 1, *r.Imp[0].Banner.W, "a repeated object merges into the earlier one")
	require.EqualValues(t, 2, *r.Imp[0].Banner.H)
	require.Equal(t, "s2", r.Site.ID)
	require.Equal(t, "p", r.Site.Page)
	require.NotNil(t, r.Cur)
	require.Empty(t, r.Cur, "an empty array is an empty, non-nil slice")
	require.Nil(t, r.WSeat, "null sets a slice to nil")
}

// TestDecodeEmptyBidsFreshEval: a seatbid without bids decodes in an Eval
// whose arena has never been used, and the Eval resets cleanly.
func TestDecodeEmptyBidsFreshEval(t *testing.T) {
	e := new(Eval)
	require.NoError(t, e.DecodeResponse([]byte(`{"id":"1","seatbid":[{"bid":[]},{"bid":null}]}`), 1000))
	require.Len(t, e.In.Response.SeatBid, 2)
	for _, sb := range e.In.Response.SeatBid {
		require.NotNil(t, sb.Bid)
		require.Empty(t, sb.Bid)
	}
	e.reset()
	require.NoError(t, e.DecodeResponse([]byte(`{"id":"1","seatbid":[]}`), 1000))
	e.reset()
}

// TestEightDigits: eightDigits reads what strconv reads, and declines every
// run of bytes that is not all digits, whatever bytes follow it.
func TestEightDigits(t *testing.T) {
	alphabet := "0123456789.eE-+,}\"\x00\xff/:"
	rng := rand.New(rand.NewPCG(3, 4))
	var word [8]byte
	short := 0
	for range 300_000 {
		n := 1 + rng.IntN(8)
		for k := range word {
			if k < n && rng.IntN(8) != 0 {
				word[k] = '0' + byte(rng.IntN(10))
			} else {
				word[k] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		x := binary.LittleEndian.Uint64(word[:])
		v, ok := eightDigits(x, n)
		want, err := strconv.ParseUint(string(word[:n]), 10, 64)
		require.Equal(t, err == nil, ok, "%q of %q", word[:n], word)
		if ok {
			require.Equal(t, want, v, "%q", word[:n])
		}
		// The direct decoder's path: the digits ShortNumber takes, read
		// by digitsValue unchecked, as eightDigits reads them.
		if m := jsonraw.ShortNumber(x); m != 0 && word[0] != '0' {
			want, err := strconv.ParseUint(string(word[:m]), 10, 64)
			require.NoError(t, err, "%q", word)
			require.Equal(t, want, digitsValue(x<<(uint(8*(8-m))&63)), "%q", word[:m])
			short++
		}
	}
	require.Greater(t, short, 10_000)
	v, ok := eightDigits(binary.LittleEndian.Uint64([]byte("99999999")), 8)
	require.True(t, ok)
	require.Equal(t, uint64(99999999), v)
}

// TestTrimSpace: trimSpace is bytes.Trim with JSON's white space, on every
// short string over white space and its neighbours.
func TestTrimSpace(t *testing.T) {
	alphabet := []byte(" \t\n\r\f\v\x00{}a\xa0")
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20_000 {
		b := make([]byte, rng.IntN(8))
		for k := range b {
			b[k] = alphabet[rng.IntN(len(alphabet))]
		}
		require.Equal(t, string(bytes.Trim(b, " \t\n\r")), string(trimSpace(b)), "%q", b)
		wantEmpty := len(b) >= 2 && b[0] == '{' && len(bytes.Trim(b[1:len(b)-1], " \t\n\r")) == 0
		require.Equal(t, wantEmpty, isEmptyObject(b), "%q", b)
	}
}

// validated is a decoder over data and its token table.
func validated(t *testing.T, data []byte) decoder {
	t.Helper()
	var toks []jsonraw.Token
	doc, err := jsonraw.ValidateTokens(data, &toks)
	require.NoError(t, err)
	return decoder{data: data, toks: toks, doc: doc}
}

// typicalDocs is the typical request and response, indented, then extra,
// then the two compacted.
func typicalDocs(t *testing.T, extra ...[]byte) [][]byte {
	t.Helper()
	req, err := os.ReadFile("testdata/typical-request.json")
	require.NoError(t, err)
	resp, err := os.ReadFile("testdata/typical-response.json")
	require.NoError(t, err)
	docs := append([][]byte{req, resp}, extra...)
	for _, d := range [][]byte{req, resp} {
		var buf bytes.Buffer
		require.NoError(t, json.Compact(&buf, d))
		docs = append(docs, buf.Bytes())
	}
	return docs
}

// TestPlainStringAgreesWithSlicing: plainString, which reads a string
// token's bytes without bounds checks, stores what slicing the document
// at the token stores (its form before), for every string token of the
// typical documents, indented and compact, and of short ones.
func TestPlainStringAgreesWithSlicing(t *testing.T) {
	docs := typicalDocs(t, []byte(`""`), []byte(`["",  "a" ,"\"",{"":"bc"}]`))
	for _, data := range docs {
		d := validated(t, data)
		toks := d.toks
		n := 0
		for k := range toks {
			t0 := &toks[k]
			var got string
			if !d.plainString(t0, unsafe.Pointer(&got)) {
				continue
			}
			require.Equal(t, string(data[t0.Off+1:t0.End-1]), got, "%q", data[t0.Off:t0.End])
			if got != "" {
				require.True(t, unsafe.StringData(got) == &data[t0.Off+1], "%q aliases the document", got)
			}
			n++
		}
		require.NotZero(t, n, "%q", data)
	}
}

// TestKeyBytesAgreesWithSlicing: keyBytes and inBetween give the key
// token's slice of the document, data[Off+1:End-1], capacity included, for
// every key of the
// typical documents, indented and compact, and of short documents whose
// keys end near the document's end.
func TestKeyBytesAgreesWithSlicing(t *testing.T) {
	docs := typicalDocs(t, []byte(`{"":1}`), []byte(`{"a":{"\"b":[],"c\u0064":{}}}`), []byte(`{"abcdefghi":0}`))
	for _, data := range docs {
		// Some spare capacity past the document, as a pooled buffer has.
		data = append(make([]byte, 0, len(data)+5), data...)
		d := validated(t, data)
		toks := d.toks
		n := 0
		for k := range toks {
			if toks[k].Kind != jsonraw.TokKey {
				continue
			}
			want := data[toks[k].Off+1 : toks[k].End-1]
			for _, got := range [][]byte{d.keyBytes(&toks[k]), inBetween(data, int(toks[k].Off), int(toks[k].End))} {
				require.Equal(t, string(want), string(got))
				require.Equal(t, cap(want), cap(got), "%q", want)
				require.True(t, unsafe.SliceData(want) == unsafe.SliceData(got), "%q", want)
			}
			n++
		}
		require.NotZero(t, n, "%q", data)
	}
}
