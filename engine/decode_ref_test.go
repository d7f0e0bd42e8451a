package engine

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/jsonraw"
)

// decodeBidBefore is decodeBid as it was before bids were decoded in place,
// the reference of checkBidsAgreeWithBefore: the bid's token found by its
// offset, the bid decoded into a zeroed wireBid (its price a *float64 in
// the arena) and copied out.
func decodeBidBefore(d *decoder, raw []byte) (b openrtb2.Bid, hasPrice bool, err error) {
	if string(raw) == "null" {
		return b, false, &typeError{value: "null", offset: offsetIn(d.data, raw), null: true}
	}
	var wb wireBid
	d.track, d.dirty = true, false
	_, err = d.value(d.tokenAt(offsetIn(d.data, raw)), wireBidPlan, unsafe.Pointer(&wb))
	d.track = false
	if err != nil {
		return b, false, err
	}
	b = wb.Bid
	if wb.Price != nil {
		b.Price = *wb.Price
	}
	return b, wb.Price != nil, nil
}

// checkBidsAgreeWithBefore decodes every bid e decoded from data again
// with decodeBidBefore, into an arena of its own, and requires the same
// bid, price presence and verbatim flag.
func checkBidsAgreeWithBefore(t *testing.T, e *Eval, data []byte) {
	t.Helper()
	if len(e.In.Bids) == 0 {
		return
	}
	doc, err := jsonraw.Validate(data)
	require.NoError(t, err)
	var ar arena
	d := decoder{data: data, toks: e.msgs.respToks, doc: doc, ar: &ar}
	for k := range e.In.Bids {
		got := &e.In.Bids[k]
		want, hasPrice, err := decodeBidBefore(&d, got.Raw)
		require.NoError(t, err, "bid %d of %q", k, data)
		require.Equal(t, want, *got.Bid, "bid %d of %q", k, data)
		require.Equal(t, hasPrice, got.HasPrice, "bid %d of %q", k, data)
		verbatim := !d.dirty && !doc.SurrogateEscapes() && doc.SpanValidUTF8(got.Raw)
		require.Equal(t, verbatim, got.verbatim, "bid %d of %q", k, data)
	}
}

// TestDecodeBidInPlace: the price's presence and value under every
// sequence of price keys, and bids whose token decodeResponse's guess
// misses (seatbids whose arrays came in another order), as the decoding
// into a wireBid had them.
func TestDecodeBidInPlace(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	f := func(doc string, hasPrice bool, price float64) {
		t.Helper()
		checkResponse(t, e, []byte(doc), 1000)
		require.Len(t, e.In.Bids, 1, doc)
		require.Equal(t, hasPrice, e.In.Bids[0].HasPrice, doc)
		require.Equal(t, price, e.In.Bids[0].Bid.Price, doc)
	}
	f(`{"id":"1","seatbid":[{"bid":[{"id":"a"}]}]}`, false, 0)
	f(`{"id":"1","seatbid":[{"bid":[{"id":"a","price":1.5}]}]}`, true, 1.5)
	f(`{"id":"1","seatbid":[{"bid":[{"id":"a","price":null}]}]}`, false, 0)
	f(`{"id":"1","seatbid":[{"bid":[{"id":"a","price":1.5,"price":null}]}]}`, false, 0)
	f(`{"id":"1","seatbid":[{"bid":[{"id":"a","price":null,"Price":2}]}]}`, true, 2)
	f(`{"id":"1","seatbid":[{"bid":[{"id":"a","price":0}]}]}`, true, 0)
	f(`{"id":"1","seatbid":[{"bid":[{"id":"a","price":-0.0,"PRICE":3,"pri\u0063e":4}]}]}`, true, 4)

	// The second seatbid's array comes first in the document: the guess
	// of each bid's token misses and the offset finds it.
	doc := `{"id":"1","seatbid":[{"bid":[]},{"bid":[{"id":"a","price":1},{"id":"b"}]}],` +
		`"seatbid":[{"bid":[{"id":"c","price":null},{"id":"d","price":2}]},{}]}`
	checkResponse(t, e, []byte(doc), 1000)
	var ids []string
	for _, b := range e.In.Bids {
		ids = append(ids, b.Bid.ID)
	}
	require.Equal(t, []string{"c", "d", "a", "b"}, ids)
}

// requireClean requires m to be as a reset leaves it: the decoded values
// zero, no slab in use and every slab's memory zero, the string records
// cleared.
func requireClean(t *testing.T, m *messages, what string) {
	t.Helper()
	require.False(t, m.reqUsed, what)
	require.False(t, m.respUsed, what)
	require.Equal(t, wireRequest{}, m.req, what)
	require.Equal(t, wireResponse{}, m.resp, what)
	require.Equal(t, openrtb2.BidResponse{}, m.out, what)
	require.Equal(t, ResponseInfo{}, m.info, what)
	require.Empty(t, m.reqToks, what)
	require.Empty(t, m.respToks, what)
	require.Empty(t, m.bidArrays, what)
	require.Empty(t, m.liveBids, what)
	for _, s := range m.respDec[:cap(m.respDec)] {
		require.Empty(t, s, what)
	}
	for _, a := range []*arena{&m.reqArena, &m.respArena} {
		require.Empty(t, a.dirty, what)
		require.Empty(t, a.text, what)
		for k := range a.slabs {
			s := &a.slabs[k]
			require.Zero(t, s.used, what)
			require.False(t, s.listed, what)
			if s.base != nil {
				for _, c := range unsafe.Slice((*byte)(s.base), uintptr(s.n)*s.size) {
					require.Zero(t, c, "%s: slab %d", what, k)
				}
			}
		}
	}
}

// TestResetSkipsOnlyCleanHalves: a reset leaves the messages clean after
// every way of decoding (taken, declined by the direct decoder, rejected,
// a half not decoded, a Run without decoding), and a reset of a clean
// half, which returns at once, finds nothing to do.
func TestResetSkipsOnlyCleanHalves(t *testing.T) {
	req, _ := os.ReadFile("testdata/typical-request.json")
	resp, _ := os.ReadFile("testdata/typical-response.json")
	deep := `{"id":"1","imp":[{"id":"1"}],"ext":` + strings.Repeat("[", maxDirectDepth+1) + strings.Repeat("]", maxDirectDepth+1) + `}`
	e := AcquireEval()
	defer ReleaseEval(e)
	e.reset()
	requireClean(t, &e.msgs, "acquired")
	for _, c := range []struct{ req, resp string }{
		{string(req), string(resp)},
		{deep, ""},
		{`{"id":1}`, `{"id":"1","seatbid":[{"bid":[{"id":"a","price":"1"}]}]}`},
		{"", string(resp)},
		{string(req), ""},
		{`{"id":"1","imp":[{"id":"1","banner":{"w":1}}]} x`, `{"id":"1","seatbid":[{"bid":[{"id":"a","adm":"\"x\""}]}]} x`},
	} {
		what := c.req + " / " + c.resp
		if c.req != "" {
			_ = e.DecodeRequest([]byte(c.req))
		}
		if c.resp != "" {
			_ = e.DecodeResponse([]byte(c.resp), 1000)
		}
		e.reset()
		requireClean(t, &e.msgs, what)
		e.reset()
		requireClean(t, &e.msgs, what+", reset twice")
	}
	// A Run hands out the empty halves: they count as used.
	reg := Registry{"imp": {Name: "imp", ResultName: "imp", Kind: PerBid,
		New: func(any, Env) (Gate, error) { return impProbe{}, nil }}}
	const yaml = "policy:\n  gates:\n    - gate: imp\n"
	cfg, err := config.Parse("imp.yaml", []byte(yaml))
	require.NoError(t, err)
	snap, err := Compile(cfg, "imp.yaml", []byte(yaml), reg)
	require.NoError(t, err)
	e.Run(snap, RunOptions{})
	require.True(t, e.msgs.reqUsed)
	require.True(t, e.msgs.respUsed)
	e.reset()
	requireClean(t, &e.msgs, "run without decoding")
}
