package gates

// uniqueBidId (OpenRTB 2.6 §4.2.3, Bid.id): bid ids must be unique within the
// response, across seatbids. Every decoded bid counts, rejected by an earlier
// gate or not: in response order (Input.Bids), the first bid with an id
// passes and every later one fails. A bid without id is requiredFields'
// concern: an empty id is never a duplicate.
//
// The gate holds no per-request state, so a bid is compared with the bids
// before it: no allocation, and cheaper than any index for the handful of
// bids a response carries; O(n²) string comparisons over a whole response
// (about 0.5 M, ~1 ms on one core, at the 1,000-bid limit). Linear time for
// large responses needs an engine hook such as Input.FirstBidWithID(id)
// *Bid, backed by a pooled index built once per evaluation like ImpByID's.

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
