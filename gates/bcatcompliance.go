package gates

// bcatCompliance (OpenRTB 2.6 §3.2.1 BidRequest.bcat and cattax, §4.2.3
// Bid.cat and Bid.cattax): no bid category may be blocked by the request's
// bcat. Categories are compared only within one taxonomy: the request's
// cattax and the bid's cattax, both 1 (Content 1.0) when absent, as in every
// OpenRTB 2.5 message. A bid with categories in another taxonomy is not
// judged (a per-bid skip counted with why="taxonomy"). In Content 1.0 a
// blocked code also blocks its children (IAB25 blocks IAB25-3) unless
// hierarchical is false. Codes of every taxonomy compare
// ASCII-case-insensitively (taxonomy.go).

import (
	"github.com/bidguard/bidguard/engine"
)

// bcatComplianceOptions configures bcatCompliance.
type bcatComplianceOptions struct {
	// Hierarchical makes a blocked Content 1.0 code block its children
	// (IAB25 blocks IAB25-3); false compares codes exactly (default true).
	Hierarchical bool `yaml:"hierarchical"`
}

type bcatCompliance struct {
	hierarchical bool
}

var bcatComplianceFactory = engine.Factory{
	Name: "bcatCompliance", ResultName: "rtb.bcat-compliance", Kind: engine.PerBid,
	Options: func() any { return &bcatComplianceOptions{Hierarchical: true} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*bcatComplianceOptions)
		return &bcatCompliance{hierarchical: o.Hierarchical}, nil
	},
}

// reasonBcatTaxonomy is the per-bid skip of a bid in another taxonomy than
// the request's bcat.
const reasonBcatTaxonomy = "bid cattax differs from request cattax"

func (g *bcatCompliance) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request without a non-empty bcat entry.
func (g *bcatCompliance) Prepare(in *engine.Input) string {
	if in.Request == nil || !hasCategory(in.Request.BCat) {
		return "no bcat in request"
	}
	return ""
}

// CheckBid rejects the first bid category, in bid order, that bcat blocks.
// A bid without categories passes whatever its cattax.
func (g *bcatCompliance) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	if !hasCategory(b.Cat) {
		return engine.Pass()
	}
	tax := catTaxOf(in.Request.CatTax)
	if catTaxOf(b.CatTax) != tax {
		return engine.SkipBid(reasonBcatTaxonomy, "taxonomy")
	}
	bcat := in.Request.BCat
	// sameCategory for each pair, its choice of rule made once per bid.
	hier := tax == taxContent10 && g.hierarchical
	for _, c := range b.Cat {
		if c == "" {
			continue
		}
		for _, blocked := range bcat {
			if hier && content10Covers(blocked, c) || !hier && blocked != "" && equalFoldASCII(blocked, c) {
				return engine.Reject("blocked category in response: "+quote(c), engine.LossCreativeFilteredCategoryExclusions, engine.NBRResponseRejectedCreativeCategoryExclusions)
			}
		}
	}
	return engine.Pass()
}

var _ engine.BidGate = (*bcatCompliance)(nil)
