package gates

// secureMarkup (OpenRTB 2.6 §3.2.4 Imp.secure; Native 1.2 §5; VAST 2-4.x): a
// bid for an imp with secure 1 must not make the browser or player load
// anything over plain http. It checks nurl, burl, lurl and iurl, then adm,
// read by gates/markup through the same readers and routing as
// markupSafety (admReading): what loads a resource
//   - HTML (foreign content, srcdoc and constant script-written markup
//     included): src, srcset, imagesrcset, data, poster, background,
//     formaction on any element, <link href>, <base href>, <form action>,
//     SVG <image>, <use>, <feImage> and <script> href and xlink:href, and
//     CSS url(), @import and image-set() in style attributes and <style>;
//   - VAST: the text of MediaFile, Mezzanine, InteractiveCreativeFile,
//     ClosedCaptionFile, Impression, Tracking, ClickTracking,
//     CompanionClickTracking, IconClickTracking, NonLinearClickTracking,
//     IconViewTracking, Error, StaticResource, IFrameResource,
//     JavaScriptResource, ExecutableResource, VASTAdTagURI, Viewable,
//     NotViewable, ViewUndetermined; HTMLResource read as HTML;
//   - native JSON (with or without the {"native": ...} wrapper): img.url,
//     imptrackers, link.clicktrackers, eventtrackers[].url, jstracker read
//     as HTML, a video asset's vasttag read as VAST.
//
// A URL is insecure when its scheme is http, compared without case after
// undoing character references and percent-encoding (and CSS escapes in
// CSS, JSON escapes in native), skipping leading spaces and ignoring tab, CR
// and LF as the WHATWG URL parser does. `http:` with or without slashes
// counts; a protocol-relative `//host` and a relative URL inherit the
// page's scheme and are not insecure. Click-throughs (<a href>,
// ClickThrough, native link.url), text, xmlns attributes and DOCTYPE
// identifiers are never read. Malformed markup is read as far as the
// readers go and never rejected for being malformed.
//
// The first insecure field, in the order nurl, burl, lurl, iurl, adm, is
// reported.

import (
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
	"github.com/prebid/openrtb/v20/openrtb2"
)

type secureMarkup struct{}

var secureMarkupFactory = engine.Factory{
	Name: "secureMarkup", ResultName: "rtb.secure-markup", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &secureMarkup{}, nil },
}

// The reasons, one per field (207 / 352).
const (
	secureMarkupLoss = engine.LossCreativeFilteredNotSecure
	secureMarkupNBR  = engine.NBRResponseRejectedCreativeNotSecure
	reasonInsecure   = "insecure url in secure impression: "
)

var secureMarkupFields = [...]string{"nurl", "burl", "lurl", "iurl", "adm"}

func (g *secureMarkup) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request in which no imp has secure 1.
func (g *secureMarkup) Prepare(in *engine.Input) string {
	for i := range in.Request.Imp {
		if isSecureImp(&in.Request.Imp[i]) {
			return ""
		}
	}
	return "no secure imp in request"
}

// CheckBid passes a bid whose imp is not secure (or unknown: impidMatch's
// business) and rejects one that loads a resource over http.
func (g *secureMarkup) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	imp := in.ImpOf(b)
	if imp == nil || !isSecureImp(imp) {
		return engine.Pass()
	}
	// The four URLs one by one, an empty one (most lurl and iurl) not
	// read: no copy of them into an array to range over.
	switch {
	case insecureURL(b.NURL):
		return secureMarkupReject(0)
	case insecureURL(b.BURL):
		return secureMarkupReject(1)
	case insecureURL(b.LURL):
		return secureMarkupReject(2)
	case insecureURL(b.IURL):
		return secureMarkupReject(3)
	}
	if adm := markupBytes(b.AdM); len(adm) > 0 && readMarkup(&b.Memo, adm, admReading(in, b), markup.DefaultLimits).insecure {
		return secureMarkupReject(4)
	}
	return engine.Pass()
}

// secureMarkupReasons are built once so that a rejection allocates nothing.
var secureMarkupReasons = func() (r [len(secureMarkupFields)]string) {
	for i, f := range secureMarkupFields {
		r[i] = reasonInsecure + f
	}
	return r
}()

func secureMarkupReject(field int) engine.Verdict {
	return engine.Reject(secureMarkupReasons[field], secureMarkupLoss, secureMarkupNBR)
}

// insecureURL is markup.InsecureURL(u), which is false for an empty u.
func insecureURL(u string) bool { return u != "" && markup.InsecureURL(u) }

func isSecureImp(imp *openrtb2.Imp) bool { return imp.Secure != nil && *imp.Secure == 1 }

var _ engine.BidGate = (*secureMarkup)(nil)
