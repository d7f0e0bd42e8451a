package gates

// battrCompliance (OpenRTB 2.6 §3.2.6 Banner.battr, §3.2.7 Video.battr,
// §3.2.8 Audio.battr, §3.2.9 Native.battr; §4.2.3 Bid.attr): no attribute of
// the bid may be blocked by the battr of the imp's media object for the
// bid's media type (mtype, or the imp's only offered type; when neither
// tells, the union of the battr of all its media objects). The first blocked
// attribute, in the bid's order, is reported. Codes 210 / 350.

import (
	"strconv"

	"github.com/bidguard/bidguard/engine"
)

type battrCompliance struct{}

var battrComplianceFactory = engine.Factory{
	Name: "battrCompliance", ResultName: "rtb.battr-compliance", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &battrCompliance{}, nil },
}

func (g *battrCompliance) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request in which no imp blocks any attribute.
func (g *battrCompliance) Prepare(in *engine.Input) string {
	for i := range in.Request.Imp {
		if impHasBAttr(&in.Request.Imp[i]) {
			return ""
		}
	}
	return "no battr in request"
}

// CheckBid rejects a bid carrying an attribute its imp blocks.
func (g *battrCompliance) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	imp := in.ImpOf(b)
	if imp == nil {
		return engine.SkipBid(reasonNoImp, skipWhyImp)
	}
	if len(b.Attr) == 0 {
		return engine.Pass()
	}
	m := bidMedia(b.Bid, imp)
	for _, a := range b.Attr {
		if attrBlocked(imp, m, a) {
			return engine.Reject("blocked creative attribute: "+strconv.FormatInt(int64(a), 10), engine.LossCreativeFilteredCreativeAttributeExclusions, engine.NBRResponseRejectedInvalidCreative)
		}
	}
	return engine.Pass()
}

var _ engine.BidGate = (*battrCompliance)(nil)
