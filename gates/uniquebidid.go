package gates

// uniqueBidId (OpenRTB 2.6 §4.2.3, Bid.id): bid ids must be unique within the
// response, across seatbids. Every decoded bid counts, rejected by an earlier
// gate or not: in response order (Input.Bids), the first bid with an id
// passes and every later one fails. A bid without id is requiredFields'
// concern: an empty id is never a duplicate.
//
// The gate holds no per-request state: Input.FirstBidWithID finds the first
// bid holding an id (by comparison for the handful of bids a response
// usually carries, through a pooled index built once per evaluation past
// 16), so a whole response is judged in linear time without allocating.

import (
	"github.com/bidguard/bidguard/engine"
)

type uniqueBidID struct{}

var uniqueBidIDFactory = engine.Factory{
	Name: "uniqueBidId", ResultName: "rtb.unique-bid-id", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &uniqueBidID{}, nil },
}

func (g *uniqueBidID) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *uniqueBidID) Prepare(*engine.Input) string { return "" }

// CheckBid rejects a bid whose id an earlier bid of the response holds.
func (g *uniqueBidID) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	id := b.ID
	if id == "" {
		return engine.Pass()
	}
	if first := in.FirstBidWithID(id); first >= 0 && &in.Bids[first] != b {
		return engine.Reject("duplicate bid id: "+quote(id), engine.LossInvalidBidResponse, engine.NBRResponseRejectedDuplicateBid)
	}
	return engine.Pass()
}

var _ engine.BidGate = (*uniqueBidID)(nil)
