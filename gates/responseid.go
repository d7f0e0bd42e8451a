package gates

// responseId (OpenRTB 2.6 §4.2.1, BidResponse.id): the response must carry
// the id of the request it answers, compared byte for byte.

import (
	"github.com/bidguard/bidguard/engine"
)

type responseID struct{}

var responseIDFactory = engine.Factory{
	Name: "responseId", ResultName: "rtb.response-id", Kind: engine.Response,
	New: func(any, engine.Env) (engine.Gate, error) { return &responseID{}, nil },
}

func (g *responseID) Kind() engine.Kind { return engine.Response }

// CheckResponse rejects a response whose id differs from the request's.
func (g *responseID) CheckResponse(in *engine.Input) engine.Verdict {
	if in.Response.ID == in.Request.ID {
		return engine.Pass()
	}
	return engine.Reject("response id does not match request id", engine.LossInvalidAuctionID, engine.NBRResponseRejectedGeneral)
}

var _ engine.ResponseGate = (*responseID)(nil)
