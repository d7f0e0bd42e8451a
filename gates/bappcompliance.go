package gates

// bappCompliance (OpenRTB 2.6 §3.2.1 BidRequest.bapp, §4.2.3 Bid.bundle): the
// advertised app of a bid must not be one the request blocks. Bundles are
// compared case-insensitively (store ids are case-insensitive on iOS and
// conventionally lower-case on Android); a bid without bundle passes.

import (
	"strings"

	"github.com/bidguard/bidguard/engine"
)

type bappCompliance struct{}

var bappComplianceFactory = engine.Factory{
	Name: "bappCompliance", ResultName: "rtb.bapp-compliance", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &bappCompliance{}, nil },
}

func (g *bappCompliance) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request without a non-empty bapp entry.
func (g *bappCompliance) Prepare(in *engine.Input) string {
	if in.Request != nil {
		for _, a := range in.Request.BApp {
			if a != "" {
				return ""
			}
		}
	}
	return "no bapp in request"
}

// CheckBid rejects a bid whose bundle is in bapp.
func (g *bappCompliance) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	if b.Bundle == "" {
		return engine.Pass()
	}
	for _, a := range in.Request.BApp {
		if strings.EqualFold(a, b.Bundle) {
			return engine.Reject("blocked app bundle: "+quote(b.Bundle), engine.LossCreativeFilteredAppBundleExclusions, engine.NBRResponseRejectedGeneral)
		}
	}
	return engine.Pass()
}

var _ engine.BidGate = (*bappCompliance)(nil)
