package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// MaxDepth is the deepest nesting a document may have.
const MaxDepth = 1000

// ErrLooksLikeRequest is returned for a response document with an "imp" key
// and no "seatbid" key.
var ErrLooksLikeRequest = errors.New("looks like a bid request")

// DecodeRequest decodes an exchange's bid request under the decode rules of
// GATES.md ("The model"): strict types, no trailing data, nesting of at most
// MaxDepth. A bid request must also have an id and at least one imp; those
// checks are the caller's (check accepts what serve would answer 400 to).
func DecodeRequest(data []byte, req *openrtb2.BidRequest) error {
	_, err := decodeRequest(data, req)
	return err
}

type wireRequest struct {
	openrtb2.BidRequest
	Regs *wireRegs `json:"regs"`
}

// wireRegs captures regs.dsa, which OpenRTB 2.6 exchanges send beside
// regs.ext.dsa and openrtb2.Regs has no field for.
type wireRegs struct {
	openrtb2.Regs
	DSA json.RawMessage `json:"dsa"`
}

func decodeRequest(data []byte, req *openrtb2.BidRequest) (regsDSA json.RawMessage, err error) {
	if err := checkDocument(data); err != nil {
		return nil, err
	}
	var w wireRequest
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, cleanJSONError(err)
	}
	*req = w.BidRequest
	if w.Regs != nil {
		regs := w.Regs.Regs
		req.Regs = &regs
		regsDSA = w.Regs.DSA
	}
	return regsDSA, nil
}

type wireResponse struct {
	openrtb2.BidResponse
	SeatBid *[]wireSeatBid  `json:"seatbid"`
	Imp     json.RawMessage `json:"imp"`
}

type wireSeatBid struct {
	openrtb2.SeatBid
	Bid []json.RawMessage `json:"bid"`
}

type wireBid struct {
	openrtb2.Bid
	Price *float64 `json:"price"`
}

// ResponseInfo is what DecodeResponse learned besides the decoded bids.
type ResponseInfo struct {
	// Empty is true for a `null` or `{}` document.
	Empty bool
	// BidCount is the number of bids in the document; when it exceeds the
	// limit no bid was decoded and TooManyBids is set.
	BidCount    int
	TooManyBids bool
}

// DecodeResponse decodes a bidder's response into resp and appends one Bid
// per seatbid[].bid[] to bids. maxBids <= 0 means no limit. A half-decoded
// response is never returned: on error resp and bids must be discarded.
func DecodeResponse(data []byte, maxBids int, resp *openrtb2.BidResponse, bids []Bid) ([]Bid, ResponseInfo, error) {
	var info ResponseInfo
	if err := checkDocument(data); err != nil {
		return bids, info, err
	}
	trimmed := bytes.TrimSpace(data)
	if bytes.Equal(trimmed, []byte("null")) {
		info.Empty = true
		return bids, info, nil
	}
	var w wireResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return bids, info, cleanJSONError(err)
	}
	if w.SeatBid == nil && w.Imp != nil {
		return bids, info, ErrLooksLikeRequest
	}
	*resp = w.BidResponse
	resp.SeatBid = nil
	info.Empty = isEmptyObject(trimmed)
	if w.SeatBid == nil {
		return bids, info, nil
	}
	for _, sb := range *w.SeatBid {
		info.BidCount += len(sb.Bid)
	}
	if maxBids > 0 && info.BidCount > maxBids {
		info.TooManyBids = true
		return bids, info, nil
	}
	resp.SeatBid = make([]openrtb2.SeatBid, len(*w.SeatBid))
	for i, sb := range *w.SeatBid {
		resp.SeatBid[i] = sb.SeatBid
		decoded := make([]openrtb2.Bid, len(sb.Bid))
		for j, raw := range sb.Bid {
			var wb wireBid
			if err := json.Unmarshal(raw, &wb); err != nil {
				return bids, info, fmt.Errorf("seatbid[%d].bid[%d]: %w", i, j, cleanJSONError(err))
			}
			if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				return bids, info, fmt.Errorf("seatbid[%d].bid[%d] is null", i, j)
			}
			decoded[j] = wb.Bid
			if wb.Price != nil {
				decoded[j].Price = *wb.Price
			}
			bids = append(bids, Bid{
				SeatIndex: i, BidIndex: j, Seat: sb.Seat,
				HasPrice: wb.Price != nil,
				BadUTF8:  !utf8.Valid(raw),
				Raw:      raw,
			})
		}
		resp.SeatBid[i].Bid = decoded
	}
	for k := range bids {
		b := &bids[k]
		b.Bid = &resp.SeatBid[b.SeatIndex].Bid[b.BidIndex]
	}
	return bids, info, nil
}

func isEmptyObject(b []byte) bool {
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	return len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// checkDocument rejects what encoding/json would accept but the decode rules
// do not: nesting deeper than MaxDepth. Syntax is left to encoding/json.
func checkDocument(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty document")
	}
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return fmt.Errorf("nesting deeper than %d", MaxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// cleanJSONError keeps encoding/json's message but drops the Go type names
// that mean nothing to an exchange engineer.
func cleanJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "value"
		}
		return fmt.Errorf("%s: wrong JSON type %s (offset %d)", field, te.Value, te.Offset)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("malformed JSON at offset %d: %s", se.Offset, se.Error())
	}
	return err
}
