package gates

// currency (OpenRTB 2.6 §3.2.1 BidRequest.cur, §4.2.1 BidResponse.cur): a
// response gate. The response currency (default USD) must be one the request
// accepts; a request without a non-blank cur entry accepts any currency and
// the gate is skipped (no cur in request). Codes compare ASCII-case-
// insensitively ("usd" is "USD"); the reason writes the code upper-cased.
// Codes 3 / 300.

import (
	"github.com/bidguard/bidguard/engine"
)

type currency struct{}

var currencyFactory = engine.Factory{
	Name: "currency", ResultName: "rtb.currency", Kind: engine.Response,
	New: func(any, engine.Env) (engine.Gate, error) { return &currency{}, nil },
}

func (g *currency) Kind() engine.Kind { return engine.Response }

// CheckResponse fails a response whose currency the request does not accept.
func (g *currency) CheckResponse(in *engine.Input) engine.Verdict {
	if !hasNonBlank(in.Request.Cur) {
		return engine.Skip("no cur in request")
	}
	cur := in.ResponseCur()
	for _, c := range in.Request.Cur {
		if engine.SameCurrency(c, cur) {
			return engine.Pass()
		}
	}
	return engine.Reject("currency "+formatCur(cur)+" not accepted", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
}

var _ engine.ResponseGate = (*currency)(nil)
