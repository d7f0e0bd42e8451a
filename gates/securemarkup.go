package gates

// secureMarkup (OpenRTB 2.6 §3.2.4 Imp.secure; Native 1.2 §5; VAST 2-4): a
// bid for an imp with secure 1 must not make the browser or player load
// anything over plain http. It checks nurl, burl, lurl and iurl, then, in
// adm, what loads a resource:
//   - HTML: src, srcset (every candidate), data, poster, background on any
//     element, <link href>, <base href>, <form action>, SVG <image> and
//     <use> href and xlink:href, and CSS url(...) and @import in style
//     attributes and <style>;
//   - VAST: the text or CDATA of MediaFile, Impression, Tracking,
//     ClickTracking, CompanionClickTracking, IconClickTracking, Error,
//     StaticResource, IFrameResource, JavaScriptResource,
//     ExecutableResource, VASTAdTagURI, Viewable, NotViewable,
//     ViewUndetermined;
//   - native JSON (with or without the {"native": ...} wrapper): img.url,
//     imptrackers, link.clicktrackers, eventtrackers[].url, and jstracker
//     scanned as HTML.
//
// A URL is insecure when its scheme is http, compared without case after
// undoing JSON escapes, character references and percent-encoding (and CSS
// escapes in CSS), skipping leading spaces and ignoring tab, CR and LF as the
// WHATWG URL parser does. References and percent-encoding are undone in every
// context, CDATA, <style> and the notice fields included, even where a
// browser would not: no encoding hides an http scheme. `http:` with or without slashes counts (`http:x`
// loads http://x/); a protocol-relative `//host` inherits the page's scheme,
// https on a secure imp, and a relative URL the page's: neither is insecure.
// Click-throughs (<a href>, ClickThrough, native link.url), text, xmlns
// attributes and DOCTYPE identifiers are never read. Malformed markup is
// split the way a browser splits it (`< MediaFile>` is text; a tag cut off at
// the end keeps its attributes) and never rejected for being malformed.
//
// The first insecure field, in the order nurl, burl, lurl, iurl, adm, is
// reported. Linear in the markup, allocation-free on the pass path (a native
// jstracker with escapes is unescaped into a pooled buffer).

import (
	"github.com/bidguard/bidguard/engine"
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
	imp := in.ImpByID(b.ImpID)
	if imp == nil || !isSecureImp(imp) {
		return engine.Pass()
	}
	for i, u := range [...]string{b.NURL, b.BURL, b.LURL, b.IURL} {
		if insecureURL(markupBytes(u), escEntity|escPercent) {
			return secureMarkupReject(i)
		}
	}
	if insecureAdm(markupBytes(b.AdM)) {
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

func isSecureImp(imp *openrtb2.Imp) bool { return imp.Secure != nil && *imp.Secure == 1 }

// insecureURL reports whether the URL in s, read through the escape layers
// flags (percent-encoding is always undone), has the http scheme.
func insecureURL(s []byte, flags uint8) bool { return insecureURLAt(s, 0, flags) }

// insecureURLAt is insecureURL for the URL that starts at p in s (s ends
// where the URL does).
func insecureURLAt(s []byte, p int, flags uint8) bool {
	d := escDecoder{s: s, flags: flags | escPercent}
	return hasScheme(&d, p, "http:")
}

// insecureAdm reads adm as readingsOf says.
func insecureAdm(adm []byte) bool {
	r := readingsOf(adm)
	return r.native != nil && insecureNative(r.native) || r.xml && insecureMarkup(adm, true) || r.html && insecureMarkup(adm, false)
}

// insecureMarkup scans HTML or XML markup; HTML with a noscript element is
// read as a browser that runs script reads it too.
func insecureMarkup(s []byte, xml bool) bool {
	bad, noscript := insecureMarkupAs(s, xml, false)
	if !bad && noscript {
		bad, _ = insecureMarkupAs(s, false, true)
	}
	return bad
}

// insecureMarkupAs is one reading of insecureMarkup, scripting telling how
// noscript is read; noscript reports a noscript element in HTML (read to
// the end only when nothing insecure was found).
func insecureMarkupAs(s []byte, xml, scripting bool) (bad, noscript bool) {
	var t markupTokenizer
	t.reset(s, xml)
	t.scripting = scripting
	// While pending, the content of a VAST URL element is read: its text and
	// CDATA pieces (comments between them skipped) feed one scheme match.
	var m schemeMatch
	pending := false
	for {
		k := t.next()
		if pending {
			switch k {
			case markupComment:
				continue
			case markupText, markupCDATA:
				d := escDecoder{s: t.data, flags: escEntity | escPercent}
				if m.feedFrom(&d, 0) {
					if m.state == 1 {
						return true, t.noscript
					}
					pending = false
				}
				continue
			}
			pending = false
		}
		switch k {
		case markupEOF:
			return false, t.noscript
		case markupStartTag:
			if insecureTag(&t) {
				return true, t.noscript
			}
			if !t.selfClosing && vastURLElement(t.name) {
				m, pending = schemeMatch{scheme: "http:"}, true
			}
		case markupRawText:
			if markupNameIs(t.name, "style") && insecureCSS(t.data, escEntity) {
				return true, t.noscript
			}
		}
	}
}

// insecureTag checks the attributes of the current start tag.
func insecureTag(t *markupTokenizer) bool {
	for {
		name, val, ok := t.nextAttr()
		if !ok {
			return false
		}
		if val == nil {
			continue
		}
		switch {
		case markupNameIs(name, "src"), markupNameIs(name, "data"), markupNameIs(name, "poster"),
			markupNameIs(name, "background"),
			markupNameIs(name, "href") && (markupNameIs(t.name, "link") || markupNameIs(t.name, "base")),
			(markupNameIs(name, "href") || markupNameIs(name, "xlink:href")) &&
				(markupNameIs(t.name, "image") || markupNameIs(t.name, "use")),
			markupNameIs(name, "action") && markupNameIs(t.name, "form"):
			if insecureURL(val, escEntity) {
				return true
			}
		case markupNameIs(name, "srcset"):
			it := srcsetURLs{d: escDecoder{s: val, flags: escEntity}}
			for {
				b, e, ok := it.next()
				if !ok {
					break
				}
				if insecureURLAt(val[:e], b, escEntity) {
					return true
				}
			}
		case markupNameIs(name, "style"):
			if insecureCSS(val, escEntity) {
				return true
			}
		}
	}
}

// insecureCSS checks the URLs of CSS read through flags (entities for a
// style attribute).
func insecureCSS(s []byte, flags uint8) bool {
	it := cssURLs{d: escDecoder{s: s, flags: flags}}
	for {
		b, e, ok := it.next()
		if !ok {
			return false
		}
		if insecureURLAt(s[:e], b, flags|escCSS) {
			return true
		}
	}
}

// insecureNative scans a native response.
func insecureNative(s []byte) bool {
	var w nativeStrings
	w.reset(s)
	for {
		kind, b, e, ok := w.next()
		switch {
		case !ok:
			return false
		case kind == nativeURL:
			if insecureURLAt(s[:e], b, escJSON|escEntity) {
				return true
			}
		case kind == nativeHTML:
			if insecureJSONHTML(s[b:e]) {
				return true
			}
		}
	}
}

// insecureJSONHTML scans HTML held in a JSON string (jstracker).
func insecureJSONHTML(raw []byte) bool {
	html, buf := unescapeNative(raw)
	bad := insecureMarkup(html, false)
	releaseUnescapedNative(buf)
	return bad
}

var _ engine.BidGate = (*secureMarkup)(nil)
