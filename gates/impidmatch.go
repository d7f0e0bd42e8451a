package gates

// impidMatch (OpenRTB 2.6 §4.2.3, Bid.impid): every bid must name an imp of
// the request. Duplicate imp ids in the request are tolerated: any matching
// id counts.

import (
	"github.com/bidguard/bidguard/engine"
)

type impidMatch struct{}

var impidMatchFactory = engine.Factory{
	Name: "impidMatch", ResultName: "rtb.impid-match", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &impidMatch{}, nil },
}

func (g *impidMatch) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request without imps.
func (g *impidMatch) Prepare(in *engine.Input) string {
	if len(in.Request.Imp) == 0 {
		return "no imp in request"
	}
	return ""
}

// CheckBid rejects a bid without impid or with an impid the request lacks.
func (g *impidMatch) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	if b.ImpID == "" {
		return engine.Reject("bid missing impid", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
	}
	if in.ImpOf(b) != nil {
		return engine.Pass()
	}
	ids := make([]string, len(in.Request.Imp))
	for i := range in.Request.Imp {
		ids[i] = in.Request.Imp[i].ID
	}
	return engine.Reject("bid impid not present in request", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral).
		WithDetails(map[string]any{"requestImps": ids})
}

var _ engine.BidGate = (*impidMatch)(nil)
