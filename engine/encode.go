package engine

import (
	"strconv"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/bidguard/bidguard/jsonraw"
)

// encodeState is an Eval's output: the body buffer and the scratch of the
// seat-non-bid extension, kept across requests.
type encodeState struct {
	buf     []byte
	scratch []byte
	entries []nonBidEntry
	sorted  []nonBidEntry
	groups  []string
	counts  []int
	seatIdx map[string]int
}

// nonBidEntry is one seatnonbid[].nonbid[] entry: the hit, for the imp.
type nonBidEntry struct {
	group int
	impID string
	hit   int
}

// maxKeptBody bounds the body buffer an Eval keeps across requests.
const maxKeptBody = 256 << 10

func (s *encodeState) reset() {
	if cap(s.buf) > maxKeptBody {
		s.buf = nil
	}
	if cap(s.scratch) > maxKeptBody {
		s.scratch = nil
	}
	clear(s.entries)
	clear(s.sorted)
	clear(s.groups)
	s.buf, s.scratch = s.buf[:0], s.scratch[:0]
	s.entries, s.sorted, s.groups, s.counts = s.entries[:0], s.sorted[:0], s.groups[:0], s.counts[:0]
	clear(s.seatIdx)
}

// Field indexes the body writer handles itself.
var (
	outSeatBid  = outPlan.fieldIndex("seatbid")
	outExt      = outPlan.fieldIndex("ext")
	seatBidBids = seatBidPlan.fieldIndex("bid")
)

// Body returns the body to send to the exchange, or nil for a 204 no-bid.
// The body lives in the Eval's buffer: it is valid until the Eval is
// released, and Body allocates nothing once the buffer has grown to size.
//
// The body re-serialises the validated structs exactly as encoding/json with
// SetEscapeHTML(false) writes openrtb2.BidResponse holding only the passed
// bids (TestBodyMatchesEncodingJSON), so it decodes under any conforming
// parser to exactly those bids: one value per key, no case-variant
// duplicates, valid UTF-8. Two departures, both per docs/design.md step 6: the
// bidder's ext objects are copied byte for byte (encoding/json would
// compact them), with invalid UTF-8 replaced by \ufffd escapes; and with
// seatNonBid the response ext gains the seat-non-bid extension (step 7).
// Fields unknown to openrtb/v20 outside ext are dropped.
func (e *Eval) Body() []byte {
	o := &e.Out
	nonBid := e.snap != nil && e.snap.SeatNonBid && len(o.Rejected) > 0
	if o.Action == NoBid && !nonBid {
		return nil
	}
	b := e.enc.buf[:0]
	if o.Action == NoBid {
		b = append(b, `{"id":`...)
		b = jsonraw.AppendString(b, e.In.Request.ID)
		b = append(b, `,"seatbid":[],"ext":`...)
		b = e.appendSeatNonBidExt(b, nil)
		b = append(b, '}')
	} else {
		b = e.appendResponse(b, nonBid)
	}
	e.enc.buf = b
	return b
}

// appendResponse writes the response with the kept bids.
func (e *Eval) appendResponse(b []byte, nonBid bool) []byte {
	resp := e.In.Response
	p := unsafe.Pointer(resp)
	b = append(b, '{')
	n := 0
	for k := range outPlan.fields {
		f := &outPlan.fields[k]
		switch {
		case k == outSeatBid:
			b = appendKey(b, f, &n)
			b = e.appendSeatBids(b, resp)
		case k == outExt && nonBid:
			b = appendKey(b, f, &n)
			b = e.appendSeatNonBidExt(b, resp.Ext)
		default:
			b = appendField(b, f, p, &n)
		}
	}
	return append(b, '}')
}

// appendSeatBids writes the seatbid array: the seatbids with a kept bid,
// each with its kept bids.
func (e *Eval) appendSeatBids(b []byte, resp *openrtb2.BidResponse) []byte {
	b = append(b, '[')
	k, written := 0, 0
	for si := range resp.SeatBid {
		sb := &resp.SeatBid[si]
		kept := 0
		for bi := range sb.Bid {
			if e.Out.Bids[k+bi].Kept {
				kept++
			}
		}
		if kept == 0 {
			k += len(sb.Bid)
			continue
		}
		if written > 0 {
			b = append(b, ',')
		}
		written++
		b = append(b, '{')
		n := 0
		for fi := range seatBidPlan.fields {
			f := &seatBidPlan.fields[fi]
			if fi != seatBidBids {
				b = appendField(b, f, unsafe.Pointer(sb), &n)
				continue
			}
			b = appendKey(b, f, &n)
			b = append(b, '[')
			first := true
			for bi := range sb.Bid {
				if !e.Out.Bids[k+bi].Kept {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				if e.In.Bids[k+bi].verbatim {
					b = append(b, e.In.Bids[k+bi].Raw...)
				} else {
					b = appendStruct(b, bidPlan, unsafe.Pointer(&sb.Bid[bi]))
				}
			}
			b = append(b, ']')
		}
		b = append(b, '}')
		k += len(sb.Bid)
	}
	return append(b, ']')
}

func appendKey(b []byte, f *field, n *int) []byte {
	if *n > 0 {
		b = append(b, ',')
	}
	*n++
	return append(b, f.key...)
}

// appendField writes one member of the struct at base, unless omitempty
// leaves it out; n counts the members written so far.
func appendField(b []byte, f *field, base unsafe.Pointer, n *int) []byte {
	ptr := at(base, f.offset)
	if f.omitEmpty && isEmpty(f.plan, ptr) {
		return b
	}
	b = appendKey(b, f, n)
	return appendValue(b, f.plan, ptr)
}

func appendStruct(b []byte, p *plan, base unsafe.Pointer) []byte {
	b = append(b, '{')
	n := 0
	for i := range p.fields {
		b = appendField(b, &p.fields[i], base, &n)
	}
	return append(b, '}')
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(p *plan, ptr unsafe.Pointer) bool {
	switch p.kind {
	case kindString:
		return len(*(*string)(ptr)) == 0
	case kindInt:
		return intAt(p, ptr) == 0
	case kindFloat:
		return *(*float64)(ptr) == 0
	case kindRaw:
		return len(*(*[]byte)(ptr)) == 0
	case kindPtr:
		return *(*unsafe.Pointer)(ptr) == nil
	case kindSlice:
		return (*sliceHeader)(ptr).len == 0
	}
	return false
}

func intAt(p *plan, ptr unsafe.Pointer) int64 {
	switch p.bits {
	case 8:
		return int64(*(*int8)(ptr))
	case 16:
		return int64(*(*int16)(ptr))
	case 32:
		return int64(*(*int32)(ptr))
	}
	return *(*int64)(ptr)
}

// appendValue writes the value of plan p at ptr as encoding/json does, but
// json.RawMessage byte for byte (see Body).
func appendValue(b []byte, p *plan, ptr unsafe.Pointer) []byte {
	switch p.kind {
	case kindString:
		return jsonraw.AppendString(b, *(*string)(ptr))
	case kindInt:
		return strconv.AppendInt(b, intAt(p, ptr), 10)
	case kindFloat:
		return jsonraw.AppendFloat(b, *(*float64)(ptr))
	case kindRaw:
		raw := *(*[]byte)(ptr)
		if len(raw) == 0 {
			return append(b, "null"...)
		}
		return jsonraw.AppendValidUTF8(b, raw)
	case kindPtr:
		target := *(*unsafe.Pointer)(ptr)
		if target == nil {
			return append(b, "null"...)
		}
		return appendValue(b, p.elem, target)
	case kindSlice:
		h := (*sliceHeader)(ptr)
		if h.data == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i := 0; i < h.len; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, p.elem, unsafe.Add(h.data, uintptr(i)*p.elem.size))
		}
		return append(b, ']')
	case kindStruct:
		return appendStruct(b, p, ptr)
	}
	panic("engine: unknown plan kind")
}

// seatNonBidKey is the IAB seat-non-bid extension's key in the response ext.
const seatNonBidKey = "seatnonbid"

// appendSeatNonBidExt writes the response ext with the IAB seat-non-bid
// extension (docs/design.md step 7): the members of the bidder's ext object
// (invalid UTF-8 replaced, one per key: the last of duplicates, none that
// matches "seatnonbid" as encoding/json would), then "seatnonbid" with one
// entry per seat, in order of first appearance. A non-object ext is
// replaced.
func (e *Eval) appendSeatNonBidExt(b []byte, existing []byte) []byte {
	s := &e.enc
	b = append(b, '{')
	n := 0
	if len(existing) > 0 {
		s.scratch = jsonraw.AppendValidUTF8(s.scratch[:0], existing)
		if m, ok := jsonraw.Object(s.scratch); ok {
			for k, v, more := m.Next(); more; k, v, more = m.Next() {
				if jsonraw.KeyIs(k, seatNonBidKey) || keyRepeats(m, k) {
					continue
				}
				if n > 0 {
					b = append(b, ',')
				}
				n++
				b = append(b, '"')
				b = append(b, k...)
				b = append(b, `":`...)
				b = append(b, v...)
			}
		}
	}
	if n > 0 {
		b = append(b, ',')
	}
	b = append(b, `"`+seatNonBidKey+`":[`...)
	e.groupNonBids()
	lo := 0
	for g := range s.groups {
		entries := s.sorted[lo:s.counts[g]]
		lo = s.counts[g]
		if g > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"seat":`...)
		b = jsonraw.AppendString(b, s.groups[g])
		b = append(b, `,"nonbid":[`...)
		for i, en := range entries {
			if i > 0 {
				b = append(b, ',')
			}
			h := &e.Out.Rejected[en.hit]
			b = append(b, `{"impid":`...)
			b = jsonraw.AppendString(b, en.impID)
			b = append(b, `,"statuscode":`...)
			b = strconv.AppendInt(b, int64(h.NBR), 10)
			b = append(b, `,"ext":{"bidguard":{`...)
			if h.BidID != "" {
				b = append(b, `"bid_id":`...)
				b = jsonraw.AppendString(b, h.BidID)
				b = append(b, ',')
			}
			b = append(b, `"gate":`...)
			b = jsonraw.AppendString(b, h.Gate)
			b = append(b, `,"reason":`...)
			b = jsonraw.AppendString(b, h.Reason)
			b = append(b, `}}}`...)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// keyRepeats reports whether a member after the current one of m has the
// key k (compared unescaped): the last one of duplicates is kept.
func keyRepeats(m jsonraw.Members, k []byte) bool {
	for k2, _, more := m.Next(); more; k2, _, more = m.Next() {
		if sameKey(k, k2) {
			return true
		}
	}
	return false
}

// sameKey compares two raw keys unescaped.
func sameKey(a, b []byte) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var r1, r2 rune
		r1, i = jsonraw.Rune(a, i)
		r2, j = jsonraw.Rune(b, j)
		if r1 != r2 {
			return false
		}
	}
	return i == len(a) && j == len(b)
}

// groupNonBids lists the seat-non-bid entries of the rejections grouped by
// seat, seats in order of first appearance: e.enc.groups[g] is a seat, its
// entries end at e.enc.sorted[e.enc.counts[g]] and start where the previous
// seat's end. A rejected bid gives one entry; a response-level rejection one
// per request imp under every seatbid of the response.
func (e *Eval) groupNonBids() {
	s := &e.enc
	if s.seatIdx == nil {
		s.seatIdx = map[string]int{}
	}
	clear(s.seatIdx)
	s.entries, s.groups, s.counts = s.entries[:0], s.groups[:0], s.counts[:0]
	add := func(seat, imp string, hit int) {
		g, ok := s.seatIdx[seat]
		if !ok {
			g = len(s.groups)
			s.seatIdx[seat] = g
			s.groups = append(s.groups, seat)
			s.counts = append(s.counts, 0)
		}
		s.counts[g]++
		s.entries = append(s.entries, nonBidEntry{group: g, impID: imp, hit: hit})
	}
	for i := range e.Out.Rejected {
		h := &e.Out.Rejected[i]
		if h.Bid >= 0 {
			add(h.Seat, h.ImpID, i)
			continue
		}
		for _, sb := range e.In.Response.SeatBid {
			for _, imp := range e.In.Request.Imp {
				add(sb.Seat, imp.ID, i)
			}
		}
	}
	// Counting sort by group, stable.
	start := 0
	for g, c := range s.counts {
		s.counts[g] = start
		start += c
	}
	s.sorted = append(s.sorted[:0], s.entries...)
	for _, en := range s.entries {
		s.sorted[s.counts[en.group]] = en
		s.counts[en.group]++
	}
}
