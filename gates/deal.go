package gates

// deal (OpenRTB 2.6 §3.2.11 Pmp, §3.2.12 Deal; §4.2.3 Bid.dealid): a bid
// that names a deal must name one of its imp's pmp.deals, from a seat the
// deal allows (wseat) and for an advertiser it allows (wadomain, normalised
// and matched as in badvCompliance: equal to or under an entry). An imp with
// pmp.private_auction 1 takes only deal bids. In order:
//   - dealid not among the imp's pmp.deals[].id → unknown deal id (4 / 300)
//   - no dealid on a private-auction imp → private auction requires a deal (213 / 300)
//   - wseat set and the bid's seat not in it → seat not allowed in deal (104 / 300)
//   - wadomain set and no adomain covered → advertiser not allowed in deal (213 / 300)
//
// A dealid on a bid whose imp is unknown, or has no pmp, names no deal of
// its imp: unknown deal id. A wseat or wadomain whose entries are all blank
// is not set; blank entries never match.
//
// Nothing to judge: a request where no imp has a pmp and no bid names a deal
// skips the gate (no pmp in request); a bid without dealid whose imp has no
// pmp (or matches no imp) is skipped and counted (why="no-pmp").

import (
	"strings"

	"github.com/bidguard/bidguard/engine"
)

type deal struct{}

var dealFactory = engine.Factory{
	Name: "deal", ResultName: "rtb.deal", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &deal{}, nil },
}

func (g *deal) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request without any pmp when no bid names a deal.
func (g *deal) Prepare(in *engine.Input) string {
	for i := range in.Request.Imp {
		if in.Request.Imp[i].PMP != nil {
			return ""
		}
	}
	for i := range in.Bids {
		if in.Bids[i].DealID != "" {
			return ""
		}
	}
	return "no pmp in request"
}

// CheckBid applies the deal checks in order.
func (g *deal) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	pmp := impPMP(in.ImpOf(b))
	if b.DealID == "" {
		switch {
		case pmp == nil:
			return engine.SkipBid("no pmp in imp", "no-pmp")
		case pmp.PrivateAuction == 1:
			return engine.Reject("private auction requires a deal", engine.LossCreativeFilteredNotAllowedInPMPDeal, engine.NBRResponseRejectedGeneral)
		}
		return engine.Pass()
	}
	d := findDeal(pmp, b.DealID)
	if d == nil {
		return engine.Reject("unknown deal id: "+quote(b.DealID), engine.LossInvalidDealID, engine.NBRResponseRejectedGeneral)
	}
	if hasNonBlank(d.WSeat) && !seatAllowed(d.WSeat, b.Seat) {
		return engine.Reject("seat not allowed in deal", engine.LossBuyerSeatBlocked, engine.NBRResponseRejectedGeneral)
	}
	if hasNonBlank(d.WADomain) && !adomainAllowed(d.WADomain, b.ADomain) {
		return engine.Reject("advertiser not allowed in deal", engine.LossCreativeFilteredNotAllowedInPMPDeal, engine.NBRResponseRejectedGeneral)
	}
	return engine.Pass()
}

// seatAllowed reports whether a non-blank wseat entry is the seat, exactly.
func seatAllowed(wseat []string, seat string) bool {
	for _, s := range wseat {
		if s == seat && strings.TrimSpace(s) != "" {
			return true
		}
	}
	return false
}

// adomainAllowed reports whether one non-blank adomain entry is equal to or
// under an entry of wadomain.
func adomainAllowed(wadomain, adomain []string) bool {
	for _, raw := range adomain {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		if d, _ := normalizeDomain(raw); listCovers(wadomain, d) {
			return true
		}
	}
	return false
}

var _ engine.BidGate = (*deal)(nil)
