package engine

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/bidguard/bidguard/jsonraw"
)

// MaxDepth is the deepest nesting a document may have.
const MaxDepth = jsonraw.MaxDepth

// ErrLooksLikeRequest is returned for a response document with an "imp" key
// and no "seatbid" key.
var ErrLooksLikeRequest = errors.New("looks like a bid request")

// The wire types are what documents decode into: the openrtb2 types plus
// what the decode rules record beside them. They resolve keys as
// encoding/json resolves them for these very types (the reference of the
// differential tests): a field of the outer struct shadows the embedded
// field of the same name.
type (
	wireRequest struct {
		openrtb2.BidRequest
		Regs *wireRegs `json:"regs"`
	}
	// wireRegs captures regs.dsa, which OpenRTB 2.6 exchanges send beside
	// regs.ext.dsa and openrtb2.Regs has no field for.
	wireRegs struct {
		openrtb2.Regs
		DSA json.RawMessage `json:"dsa"`
	}
	// wireResponse keeps each bid's bytes (wireSeatBid) so that the bids
	// are counted before any is decoded, and notes an "imp" key.
	wireResponse struct {
		openrtb2.BidResponse
		SeatBid *[]wireSeatBid  `json:"seatbid"`
		Imp     json.RawMessage `json:"imp"`
	}
	wireSeatBid struct {
		openrtb2.SeatBid
		Bid rawBids `json:"bid"`
	}
	// rawBids is a seatbid's bids, kept as bytes. A type of its own, so
	// that the decoder knows the arrays it reads into it (decoder.bidArrays).
	rawBids []json.RawMessage
	// wireBid tells a missing or null price from a price of 0.
	wireBid struct {
		openrtb2.Bid
		Price *float64 `json:"price"`
	}
)

// Plans, compiled once.
var (
	requestPlan  = planFor(reflect.TypeFor[wireRequest]())
	responsePlan = planFor(reflect.TypeFor[wireResponse]())
	wireBidPlan  = planFor(reflect.TypeFor[wireBid]())
	// outPlan is the response as forwarded; its seatbid and bid element
	// plans give the slabs the decoded seatbids and bids live in.
	outPlan     = planFor(reflect.TypeFor[openrtb2.BidResponse]())
	seatBidPlan = outPlan.fields[outPlan.fieldIndex("seatbid")].plan.elem
	bidPlan     = seatBidPlan.fields[seatBidPlan.fieldIndex("bid")].plan.elem
	rawBidsPlan = planFor(reflect.TypeFor[rawBids]())
	// bidInPlacePlan decodes a bid straight into its openrtb2.Bid.
	bidInPlacePlan = inPlace(wireBidPlan, bidPlan)
)

// inPlace returns the plan of a wire bid (wire: openrtb2.Bid and its price
// as a *float64) that decodes into an openrtb2.Bid (out) with no wire value
// between: the same fields, keys and rules, but the price is stored into
// the bid's own Price (kindPresentFloat), its pointer's nil-ness kept by the
// decoder. Decoding into a wireBid and copying its Bid out cost a clear and
// a copy of the whole bid, and an arena float, per bid.
func inPlace(wire, out *plan) *plan {
	p := *wire
	p.typ, p.size = out.typ, out.size
	p.fields = slices.Clone(wire.fields)
	price := &p.fields[wire.fieldIndex("price")]
	price.offset = out.fields[out.fieldIndex("price")].offset
	price.plan = &plan{typ: price.plan.elem.typ, kind: kindPresentFloat, size: price.plan.elem.size, slab: -1, pointerFree: true}
	return &p
}

// ResponseInfo is what DecodeResponse learned besides the decoded bids.
type ResponseInfo struct {
	// Empty is true for an empty document (no bytes or only whitespace),
	// `null` and `{}`.
	Empty bool
	// BidCount is the number of bids in the document; when it exceeds the
	// limit no bid was decoded and TooManyBids is set.
	BidCount    int
	TooManyBids bool
}

// messages is an Eval's decoded pair and the storage behind it.
type messages struct {
	req       wireRequest
	resp      wireResponse
	out       openrtb2.BidResponse
	info      ResponseInfo
	reqToks   []jsonraw.Token // the request's tokens, for the token path (a request the direct decoder declines)
	respToks  []jsonraw.Token // the response's tokens, for the decoder and the scan table
	respDec   []string        // the response's strings that needed decoding, for the scan table
	bidArrays []int           // the response's non-empty bid arrays (token indexes), in document order
	liveBids  []uint32        // offsets of the first bid of each seatbid's bids, for shadowedBids
	reqArena  arena
	respArena arena
	// reqUsed (respUsed): the request's (the response's) half was written
	// or handed out since its last reset, which is otherwise a no-op: a
	// pooled Eval is reset when released and again as it decodes.
	reqUsed, respUsed bool
}

func (m *messages) reset() {
	m.resetRequest()
	m.resetResponse()
}

func (m *messages) resetRequest() {
	if !m.reqUsed {
		return
	}
	m.reqUsed = false
	m.reqArena.reset()
	if cap(m.reqToks) > maxPooledTokens {
		m.reqToks = nil
	}
	m.reqToks = m.reqToks[:0]
	m.req = wireRequest{}
}

// maxPooledTokens bounds the token buffer an Eval keeps across requests.
const maxPooledTokens = 16 << 10

// responseBytesPerToken is a little under the bytes per token of bid
// responses (16 in the typical response and in 1,000 of its bids): the
// estimate a large response's token buffer is made with.
const responseBytesPerToken = 12

func (m *messages) resetResponse() {
	if !m.respUsed {
		return
	}
	m.respUsed = false
	m.respArena.reset()
	if cap(m.respToks) > maxPooledTokens {
		m.respToks = nil
	}
	m.respToks = m.respToks[:0]
	clear(m.respDec)
	m.respDec = m.respDec[:0]
	m.bidArrays, m.liveBids = m.bidArrays[:0], m.liveBids[:0]
	m.resp, m.out, m.info = wireResponse{}, openrtb2.BidResponse{}, ResponseInfo{}
}

// DecodeRequest decodes the exchange's bid request into the Eval under the
// decode rules of docs/gates.md ("Decoding"): the syntax encoding/json accepts,
// strict types, no trailing data, nesting of at most MaxDepth, no number
// overflowing float64. A bid request must also have an id and at least one
// imp; those checks are the caller's (check accepts what serve would answer
// 400 to). data must stay unmodified until the Eval is released: decoded
// strings alias it.
func (e *Eval) DecodeRequest(data []byte) error {
	m := &e.msgs
	m.resetRequest()
	m.reqUsed = true
	e.In.RawRequest, e.In.Request, e.In.RegsDSA = data, nil, nil
	dd := directDecoder{data: data, ar: &m.reqArena}
	if dd.decode(requestPlan, unsafe.Pointer(&m.req)) != nil {
		// Declined: the token path decides, and gives the error.
		m.resetRequest()
		if err := m.decodeRequestTokens(data); err != nil {
			return err
		}
	}
	req := &m.req.BidRequest
	if m.req.Regs != nil {
		req.Regs = &m.req.Regs.Regs
		e.In.RegsDSA = m.req.Regs.DSA
	}
	e.In.Request = req
	return nil
}

// decodeRequestTokens decodes the request through its tokens, as a
// response is decoded: what decides a document the direct decoder declines.
func (m *messages) decodeRequestTokens(data []byte) error {
	m.reqUsed = true
	doc, err := jsonraw.ValidateTokens(data, &m.reqToks)
	if err != nil {
		return err
	}
	d := decoder{data: data, toks: m.reqToks, doc: doc, ar: &m.reqArena}
	if err := d.decode(requestPlan, unsafe.Pointer(&m.req)); err != nil {
		m.resetRequest()
		return err
	}
	return nil
}

// DecodeResponse decodes the bidder's response into the Eval, with one Bid
// per seatbid[].bid[] in In.Bids. maxBids (limits.maxBids; <= 0 means no
// limit) is applied to the count of bids before any bid is decoded. An empty
// document (no bytes or only whitespace) is a response without bids, as
// `null` and `{}` are. A half-decoded response is never judged: on error the
// Eval holds no response. data must stay unmodified until the Eval is
// released: decoded strings and Bid.Raw alias it.
func (e *Eval) DecodeResponse(data []byte, maxBids int) error {
	m := &e.msgs
	m.resetResponse()
	m.respUsed = true
	in := &e.In
	in.RawResponse, in.Response, in.Bids, in.ResponseEmpty = data, nil, in.Bids[:0], false
	in.rawResponseUTF8, in.responseTokens, in.responseDecoded = false, nil, nil
	if err := m.decodeResponse(data, maxBids, in); err != nil {
		m.resetResponse()
		in.Bids, in.rawResponseUTF8, in.responseTokens, in.responseDecoded = in.Bids[:0], false, nil, nil
		return err
	}
	in.Response = &m.out
	in.ResponseEmpty = m.info.Empty
	in.responseDecoded = m.respDec
	return nil
}

func (m *messages) decodeResponse(data []byte, maxBids int, in *Input) error {
	// JSON's white space only: a form feed or a no-break space before
	// null is a document encoding/json refuses, not a no-bid.
	trimmed := trimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		m.info.Empty = true
		return nil
	}
	if est := len(data) / responseBytesPerToken; est > maxPooledTokens && cap(m.respToks) < est {
		// A document whose tokens the Eval will not keep: one buffer of
		// about the right size instead of append's doublings from zero.
		m.respToks = make([]jsonraw.Token, 0, est)
	}
	doc, err := jsonraw.ValidateTokens(data, &m.respToks)
	if err != nil {
		return err
	}
	in.rawResponseUTF8 = doc.ValidUTF8()
	if len(m.respToks) > 0 {
		in.responseTokens = m.respToks
	}
	d := decoder{data: data, toks: m.respToks, doc: doc, ar: &m.respArena, dec: &m.respDec, bidArrays: &m.bidArrays}
	if err := d.decode(responsePlan, unsafe.Pointer(&m.resp)); err != nil {
		return err
	}
	if m.resp.SeatBid == nil && m.resp.Imp != nil {
		return ErrLooksLikeRequest
	}
	m.out = m.resp.BidResponse
	m.info.Empty = isEmptyObject(trimmed)
	var wire []wireSeatBid
	if m.resp.SeatBid != nil {
		wire = *m.resp.SeatBid
	}
	live := 0 // seatbids with bids: each holds one array of m.bidArrays
	for i := range wire {
		m.info.BidCount += len(wire[i].Bid)
		if len(wire[i].Bid) > 0 {
			live++
		}
	}
	if maxBids > 0 && m.info.BidCount > maxBids {
		m.info.TooManyBids = true
		return nil
	}
	if live != len(m.bidArrays) {
		if err := m.shadowedBids(&d, wire); err != nil {
			return err
		}
	}
	if wire == nil {
		return nil
	}
	seats := unsafe.Slice((*openrtb2.SeatBid)(m.respArena.alloc(seatBidPlan, len(wire))), len(wire))
	arrays := 0 // the seatbids with bids so far
	for i := range wire {
		w := &wire[i]
		seats[i] = w.SeatBid
		bids := unsafe.Slice((*openrtb2.Bid)(m.respArena.alloc(bidPlan, len(w.Bid))), len(w.Bid))
		// The token of each bid, guessed and checked by decodeBid: the
		// first element of the seatbid's array (its array is usually the
		// next of m.bidArrays), then the token after the bid before.
		k := 0
		if len(w.Bid) > 0 && arrays < len(m.bidArrays) {
			k = m.bidArrays[arrays] + 1
			arrays++
		}
		for j, raw := range w.Bid {
			var err error
			if k, err = m.decodeBid(&d, raw, k, &bids[j]); err != nil {
				return within(within(within(within(err, "["+strconv.Itoa(j)+"]"), "bid"), "["+strconv.Itoa(i)+"]"), "seatbid")
			}
			in.Bids = append(in.Bids, Bid{
				Bid: &bids[j], SeatIndex: i, BidIndex: j, Seat: w.Seat,
				HasPrice: d.present,
				BadUTF8:  !doc.SpanValidUTF8(raw),
				Raw:      raw,
				verbatim: !d.dirty && !doc.SurrogateEscapes() && doc.SpanValidUTF8(raw),
			})
		}
		seats[i].Bid = bids
	}
	m.out.SeatBid = seats
	return nil
}

// decodeBid decodes one bid from its bytes (a part of the document) into b,
// zeroed memory, and returns the index of the token after it. k is a guess
// at the bid's token, taken when the token is at raw (else found by its
// offset). The bid's "price" is stored into b.Price, and d.present tells
// whether it was there and not null.
func (m *messages) decodeBid(d *decoder, raw []byte, k int, b *openrtb2.Bid) (int, error) {
	off := offsetIn(d.data, raw)
	if string(raw) == "null" {
		return k, &typeError{value: "null", offset: off, null: true}
	}
	if uint(k) >= uint(len(d.toks)) || int(d.toks[k].Off) != off {
		k = d.tokenAt(off)
	}
	d.track, d.dirty, d.present = true, false, false
	next, err := d.value(k, bidInPlacePlan, unsafe.Pointer(b))
	d.track = false
	return next, err
}

// shadowedBids decodes, for their type errors only, the bids of the arrays
// that a later key replaced: a repeated or case-variant "bid" key, a
// repeated "seatbid" whose array is shorter or null. encoding/json decodes
// every one of them into the model (a type error in one rejects the
// document even though a later value replaces it); the decoder kept them as
// bytes, and the bids that remain are decoded after the count. A null bid
// there is no error (encoding/json leaves the element as it is); only the
// bids that remain must not be null.
func (m *messages) shadowedBids(d *decoder, wire []wireSeatBid) error {
	for i := range wire {
		if len(wire[i].Bid) > 0 {
			m.liveBids = append(m.liveBids, uint32(offsetIn(d.data, wire[i].Bid[0])))
		}
	}
	slices.Sort(m.liveBids)
	for _, k := range m.bidArrays {
		if _, live := slices.BinarySearch(m.liveBids, d.toks[k+1].Off); live {
			continue
		}
		end := int(d.toks[k].Next)
		for j, n := k+1, 0; j < end-1; n++ {
			// Into zeroed memory, as a live bid: the arena's, taken for
			// each (a rare path).
			b := m.respArena.alloc(bidPlan, 1)
			var err error
			if j, err = d.value(j, bidInPlacePlan, b); err != nil {
				return within(within(within(within(err, "["+strconv.Itoa(n)+"]"), "bid"), "[]"), "seatbid")
			}
		}
	}
	return nil
}

// Info returns what the response decoder recorded.
func (e *Eval) Info() ResponseInfo { return e.msgs.info }

// trimSpace returns b without the white space JSON allows between tokens
// at either end.
func trimSpace(b []byte) []byte {
	b = b[jsonraw.SkipSpace(b, 0):]
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\n', '\r':
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}

func isEmptyObject(b []byte) bool {
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	return len(trimSpace(b[1:len(b)-1])) == 0
}
