package gates

// requiredFields (OpenRTB 2.6 §4.2.3, Bid): a bid needs an id, a crid (the
// creative id exchanges audit and block by) and markup, inline in adm or
// served on the win notice nurl. Checked in that order; the first missing
// field is reported.

import (
	"github.com/bidguard/bidguard/engine"
)

type requiredFields struct{}

var requiredFieldsFactory = engine.Factory{
	Name: "requiredFields", ResultName: "rtb.required-fields", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &requiredFields{}, nil },
}

func (g *requiredFields) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *requiredFields) Prepare(*engine.Input) string { return "" }

// CheckBid rejects the first missing field of id, crid, markup.
func (g *requiredFields) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	switch {
	case b.ID == "":
		return engine.Reject("bid missing id", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
	case b.CrID == "":
		return engine.Reject("bid missing crid", engine.LossMissingCreativeID, engine.NBRResponseRejectedGeneral)
	case b.AdM == "" && b.NURL == "":
		return engine.Reject("bid missing markup", engine.LossMissingMarkup, engine.NBRResponseRejectedGeneral)
	}
	return engine.Pass()
}

var _ engine.BidGate = (*requiredFields)(nil)
