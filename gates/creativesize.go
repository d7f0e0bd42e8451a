package gates

// creativeSize (OpenRTB 2.6 §3.2.6 Banner.w/h/format, §3.2.10 Format;
// §4.2.3 Bid.w/h): a banner bid (mtype 1, or a bid without mtype on an imp
// that offers only a banner) must be sized as the banner's w×h or as one of
// its fixed format sizes. Flexible format entries (wratio, hratio or wmin
// set) are ignored; an imp that declares no fixed size is not judged. A bid
// without a size (w and h both absent or 0) passes when the imp offers
// exactly one fixed size (the exchange renders it at that size, as
// Prebid.js does) and is otherwise "creative size missing"; a bid with only
// one of w and h is judged as <w>x<h> with the other 0. Codes 203 / 351.

import (
	"strconv"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// Per-bid skips of creativeSize and their bidguard_bids_skipped_total{why}.
const (
	reasonNotBanner   = "not a banner bid"
	reasonNoFixedSize = "imp declares no fixed size"
)

type creativeSize struct{}

var creativeSizeFactory = engine.Factory{
	Name: "creativeSize", ResultName: "rtb.creative-size", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &creativeSize{}, nil },
}

func (g *creativeSize) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request in which no imp offers a banner.
func (g *creativeSize) Prepare(in *engine.Input) string {
	for i := range in.Request.Imp {
		if in.Request.Imp[i].Banner != nil {
			return ""
		}
	}
	return "no banner in request"
}

// CheckBid rejects a banner bid whose size the banner does not allow.
func (g *creativeSize) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	imp := in.ImpOf(b)
	if imp == nil {
		return engine.SkipBid(reasonNoImp, skipWhyImp)
	}
	if bidMedia(b.Bid, imp) != mediaBanner {
		return engine.SkipBid(reasonNotBanner, "media")
	}
	bn := imp.Banner
	if bn == nil || !bannerHasFixedSize(bn) {
		return engine.SkipBid(reasonNoFixedSize, "size")
	}
	if b.W == 0 && b.H == 0 {
		if bannerSingleSize(bn) {
			return engine.Pass()
		}
		return engine.Reject("creative size missing", engine.LossCreativeFilteredSizeNotAllowed, engine.NBRResponseRejectedCreativeSizeNotAllowed)
	}
	if bannerAllows(bn, b.W, b.H) {
		return engine.Pass()
	}
	return engine.Reject("creative size "+strconv.FormatInt(b.W, 10)+"x"+strconv.FormatInt(b.H, 10)+" not allowed", engine.LossCreativeFilteredSizeNotAllowed, engine.NBRResponseRejectedCreativeSizeNotAllowed)
}

// bannerSize reports the banner's own w×h when both are positive.
func bannerSize(bn *openrtb2.Banner) (w, h int64, ok bool) {
	if bn.W == nil || bn.H == nil || *bn.W <= 0 || *bn.H <= 0 {
		return 0, 0, false
	}
	return *bn.W, *bn.H, true
}

// fixedFormat reports whether a format entry names a fixed size: w and h
// positive and none of the flexible fields (wratio, hratio, wmin) set.
func fixedFormat(f *openrtb2.Format) bool {
	return f.W > 0 && f.H > 0 && f.WRatio == 0 && f.HRatio == 0 && f.WMin == 0
}

func bannerHasFixedSize(bn *openrtb2.Banner) bool {
	if _, _, ok := bannerSize(bn); ok {
		return true
	}
	for i := range bn.Format {
		if fixedFormat(&bn.Format[i]) {
			return true
		}
	}
	return false
}

// bannerSingleSize reports whether the banner offers exactly one distinct
// fixed size (its w×h and its fixed formats together).
func bannerSingleSize(bn *openrtb2.Banner) bool {
	w, h, found := bannerSize(bn)
	for i := range bn.Format {
		f := &bn.Format[i]
		switch {
		case !fixedFormat(f):
		case !found:
			w, h, found = f.W, f.H, true
		case f.W != w || f.H != h:
			return false
		}
	}
	return found
}

func bannerAllows(bn *openrtb2.Banner, w, h int64) bool {
	if bw, bh, ok := bannerSize(bn); ok && bw == w && bh == h {
		return true
	}
	for i := range bn.Format {
		f := &bn.Format[i]
		if fixedFormat(f) && f.W == w && f.H == h {
			return true
		}
	}
	return false
}

var _ engine.BidGate = (*creativeSize)(nil)
