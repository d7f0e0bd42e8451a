package engine

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// Body returns the body to send to the exchange, or nil for a 204 no-bid.
//
// The body re-serialises the validated structs, so it decodes under any
// conforming parser to exactly the bids that passed: one value per key, no
// case-variant duplicates, valid UTF-8. The bidder's ext objects are copied
// byte for byte (re-encoded only when they hold invalid UTF-8), adm is
// written without HTML escaping, and fields unknown to openrtb/v20 outside
// ext are dropped.
func (e *Eval) Body() []byte {
	o := &e.Out
	nonBid := e.snap != nil && e.snap.SeatNonBid && len(o.Rejected) > 0
	if o.Action == NoBid && !nonBid {
		return nil
	}
	var b bytes.Buffer
	resp := e.In.Response
	if o.Action == NoBid {
		b.WriteString(`{"id":`)
		writeJSON(&b, e.In.Request.ID)
		b.WriteString(`,"seatbid":[],"ext":`)
		b.Write(e.seatNonBidExt(nil))
		b.WriteByte('}')
		return b.Bytes()
	}
	top := *resp
	top.SeatBid, top.Ext = nil, nil
	writeObjectOpen(&b, top)
	b.WriteString(`,"seatbid":[`)
	firstSeat := true
	k := 0
	for si := range resp.SeatBid {
		sb := &resp.SeatBid[si]
		n := 0
		for bi := range sb.Bid {
			_ = bi
			if e.Kept(k + bi) {
				n++
			}
		}
		if n == 0 {
			k += len(sb.Bid)
			continue
		}
		if !firstSeat {
			b.WriteByte(',')
		}
		firstSeat = false
		b.WriteString(`{"bid":[`)
		first := true
		for bi := range sb.Bid {
			if !e.Kept(k + bi) {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			bid := sb.Bid[bi]
			ext := bid.Ext
			bid.Ext = nil
			writeObjectOpen(&b, bid)
			writeExt(&b, ext)
			b.WriteByte('}')
		}
		k += len(sb.Bid)
		b.WriteByte(']')
		if sb.Seat != "" {
			b.WriteString(`,"seat":`)
			writeJSON(&b, sb.Seat)
		}
		if sb.Group != 0 {
			b.WriteString(`,"group":`)
			writeJSON(&b, sb.Group)
		}
		writeExt(&b, sb.Ext)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	if nonBid {
		b.WriteString(`,"ext":`)
		b.Write(e.seatNonBidExt(resp.Ext))
	} else {
		writeExt(&b, resp.Ext)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeObjectOpen writes v's JSON object without its closing brace.
func writeObjectOpen(b *bytes.Buffer, v any) {
	start := b.Len()
	writeJSON(b, v)
	if b.Len() > start && b.Bytes()[b.Len()-1] == '}' {
		b.Truncate(b.Len() - 1)
	}
}

func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the openrtb2 types always encode
	if n := b.Len(); n > 0 && b.Bytes()[n-1] == '\n' {
		b.Truncate(n - 1)
	}
}

// writeExt appends `,"ext":<raw>` when raw holds a value.
func writeExt(b *bytes.Buffer, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return
	}
	b.WriteString(`,"ext":`)
	b.Write(cleanRaw(raw))
}

// cleanRaw returns raw unchanged when it is valid UTF-8, else re-encoded
// (invalid bytes become U+FFFD).
func cleanRaw(raw []byte) []byte {
	if utf8.Valid(raw) {
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return []byte("null")
	}
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.Bytes()
}

type nonBidExt struct {
	BidID  string `json:"bid_id,omitempty"`
	Gate   string `json:"gate"`
	Reason string `json:"reason"`
}

type nonBid struct {
	ImpID      string `json:"impid"`
	StatusCode int    `json:"statuscode"`
	Ext        struct {
		Bidguard nonBidExt `json:"bidguard"`
	} `json:"ext"`
}

type seatNonBid struct {
	Seat   string   `json:"seat"`
	NonBid []nonBid `json:"nonbid"`
}

// seatNonBidExt builds the response ext with the IAB seat-non-bid extension,
// keeping the keys of the bidder's ext object.
func (e *Eval) seatNonBidExt(existing json.RawMessage) []byte {
	var seats []seatNonBid
	idx := map[string]int{}
	add := func(seat string, nb nonBid) {
		i, ok := idx[seat]
		if !ok {
			i = len(seats)
			idx[seat] = i
			seats = append(seats, seatNonBid{Seat: seat, NonBid: []nonBid{}})
		}
		seats[i].NonBid = append(seats[i].NonBid, nb)
	}
	for _, h := range e.Out.Rejected {
		mk := func(imp string) nonBid {
			nb := nonBid{ImpID: imp, StatusCode: h.NBR}
			nb.Ext.Bidguard = nonBidExt{BidID: h.BidID, Gate: h.Gate, Reason: h.Reason}
			return nb
		}
		if h.Bid >= 0 {
			add(h.Seat, mk(h.ImpID))
			continue
		}
		for _, sb := range e.In.Response.SeatBid {
			for _, imp := range e.In.Request.Imp {
				add(sb.Seat, mk(imp.ID))
			}
		}
	}
	if seats == nil {
		seats = []seatNonBid{}
	}
	m := map[string]json.RawMessage{}
	if len(existing) > 0 {
		_ = json.Unmarshal(cleanRaw(existing), &m) // a non-object ext is replaced
	}
	var sb bytes.Buffer
	writeJSON(&sb, seats)
	m["seatnonbid"] = sb.Bytes()
	var out bytes.Buffer
	writeJSON(&out, m)
	return out.Bytes()
}

var _ = openrtb2.BidResponse{}
