package gates

// mediaType (OpenRTB 2.6 §4.2.3 Bid.mtype, §3.2.4 Imp): a bid's mtype must
// name a media type its imp offers (banner 1, video 2, audio 3, native 4);
// an unknown mtype value never matches. A bid without mtype (OpenRTB 2.5)
// passes, unless requireMtype is set and its imp offers several media types,
// so that the type cannot be inferred. Codes 204 / 353.

import (
	"strconv"

	"github.com/bidguard/bidguard/engine"
)

// mediaTypeOptions configures mediaType.
type mediaTypeOptions struct {
	// RequireMtype rejects a bid without mtype whose imp offers several media
	// types (default false: such 2.5 bids pass).
	RequireMtype bool `yaml:"requireMtype"`
}

type mediaType struct {
	requireMtype bool
}

var mediaTypeFactory = engine.Factory{
	Name: "mediaType", ResultName: "rtb.media-type", Kind: engine.PerBid,
	Options: func() any { return &mediaTypeOptions{} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*mediaTypeOptions)
		return &mediaType{requireMtype: o.RequireMtype}, nil
	},
}

func (g *mediaType) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request without imps.
func (g *mediaType) Prepare(in *engine.Input) string {
	if len(in.Request.Imp) == 0 {
		return "no imp in request"
	}
	return ""
}

// CheckBid rejects an mtype the imp did not offer, and a missing mtype on a
// multi-type imp when requireMtype is set.
func (g *mediaType) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	imp := in.ImpOf(b)
	if imp == nil {
		return engine.SkipBid(reasonNoImp, skipWhyImp)
	}
	offered := offeredMedia(imp)
	if b.MType != 0 {
		if offered.has(mtypeMedia(b.MType)) {
			return engine.Pass()
		}
		return engine.Reject("media type "+strconv.Itoa(int(b.MType))+" not offered by imp "+quote(imp.ID), engine.LossCreativeFilteredIncorrectCreativeFormat, engine.NBRResponseRejectedCreativeIncorrectFormat)
	}
	if g.requireMtype && offered.count() > 1 {
		return engine.Reject("bid has no mtype and imp "+quote(imp.ID)+" offers several media types", engine.LossCreativeFilteredIncorrectCreativeFormat, engine.NBRResponseRejectedCreativeIncorrectFormat)
	}
	return engine.Pass()
}

var _ engine.BidGate = (*mediaType)(nil)
