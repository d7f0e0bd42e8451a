package gates

// badvCompliance (OpenRTB 2.6 §3.2.1, BidRequest.badv; §4.2.3, Bid.adomain):
// no advertiser domain of a bid may equal, or be a subdomain of, a domain the
// request blocks. Both sides are normalised as in adomainVerify (domain.go),
// so "Shop.Blocked.COM" is blocked by "blocked.com" and "notblocked.com" is
// not; one trailing dot is dropped on either side ("blocked.com." is
// "blocked.com", and the reason writes it so). Codes 205 / 356.

import (
	"github.com/bidguard/bidguard/engine"
)

type badvCompliance struct{}

var badvComplianceFactory = engine.Factory{
	Name: "badvCompliance", ResultName: "rtb.badv-compliance", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &badvCompliance{}, nil },
}

func (g *badvCompliance) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request whose badv holds no non-blank entry.
func (g *badvCompliance) Prepare(in *engine.Input) string {
	if !hasNonBlank(in.Request.BAdv) {
		return "no badv in request"
	}
	return ""
}

// CheckBid rejects the first adomain entry that badv covers.
func (g *badvCompliance) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	for _, raw := range b.ADomain {
		t := trimSpace(raw)
		if t == "" {
			continue
		}
		d, _ := normalizeTrimmed(t)
		if listCovers(in.Request.BAdv, d) {
			return engine.Reject("blocked advertiser domain: "+quote(trimDot(d)), engine.LossCreativeFilteredAdvertiserExclusions, engine.NBRResponseRejectedCreativeAdvertiserBlocking)
		}
	}
	return engine.Pass()
}

var _ engine.BidGate = (*badvCompliance)(nil)
