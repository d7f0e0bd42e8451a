package gates

// markupSafety (OpenRTB 2.6 §4.2.3 Bid.adm): the exchange renders adm in
// front of people, so markup that hijacks the page or hides what it runs is
// malvertising. Rejected, in this order: adm over maxAdmBytes; invalid UTF-8
// in the bid's raw bytes (recorded by the decoder); a forced redirect; an
// attribute value that is a javascript: URL; a decode-and-run call; a hit of
// an extraPatterns regular expression.
//
// adm is read with secureMarkup's tokenizer (markup.go) and decoders, as
// readingsOf routes it: native JSON (jstracker scanned as HTML, the URL
// strings checked for javascript:), XML (the content of a <script> element
// read as script), HTML, one or more of them. Script is read by markupjs.go
// in <script> bodies and in event handler attributes (on*, through
// character references). A forced redirect is an assignment to location
// (bare, or under top, parent, window, self, frames, document or
// globalThis; also in bracket form), to location.href, a call to
// location.replace( or location.assign(, or <meta http-equiv=refresh>.
// A javascript: URL is an attribute value that starts with javascript: once
// character references are undone, tab, CR and LF removed and leading spaces
// skipped (any attribute but the text-only alt, title, placeholder and
// aria-*; also the URL elements of VAST and native). Decode-and-run
// is eval, Function, document.write (any argument) or setTimeout/setInterval
// (a first argument that is not a function) whose argument calls atob,
// unescape, decodeURIComponent or String.fromCharCode, in code or in a string
// that will run. HTML inside markup (<iframe srcdoc>, VAST HTMLResource,
// native jstracker) is scanned the same way, to 4 levels.
//
// Linear in the markup; allocation-free on the pass path (escaped nested
// markup is decoded into a pooled buffer).

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/bidguard/bidguard/engine"
)

// markupSafetyOptions configures markupSafety.
type markupSafetyOptions struct {
	// MaxAdmBytes is the largest adm accepted, in bytes (default 1 MiB).
	MaxAdmBytes int `yaml:"maxAdmBytes"`
	// ExtraPatterns are RE2 regular expressions; a match anywhere in adm
	// rejects the bid with "pattern <index>".
	ExtraPatterns []string `yaml:"extraPatterns"`
}

const defaultMaxAdmBytes = 1 << 20

func (o *markupSafetyOptions) validate() ([]*regexp.Regexp, error) {
	var errs []error
	if o.MaxAdmBytes <= 0 {
		errs = append(errs, fmt.Errorf("maxAdmBytes must be > 0, got %d", o.MaxAdmBytes))
	}
	res := make([]*regexp.Regexp, 0, len(o.ExtraPatterns))
	for i, p := range o.ExtraPatterns {
		if p == "" {
			errs = append(errs, fmt.Errorf("extraPatterns[%d] is empty", i))
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("extraPatterns[%d]: %w", i, err))
			continue
		}
		res = append(res, re)
	}
	return res, errors.Join(errs...)
}

type markupSafety struct {
	maxAdm   int
	patterns []*regexp.Regexp
	reasons  []string // "unsafe markup: pattern <i>"
}

var markupSafetyFactory = engine.Factory{
	Name: "markupSafety", ResultName: "rtb.markup-safety", Kind: engine.PerBid,
	Options: func() any { return &markupSafetyOptions{MaxAdmBytes: defaultMaxAdmBytes} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*markupSafetyOptions)
		res, err := o.validate()
		if err != nil {
			return nil, err
		}
		g := &markupSafety{maxAdm: o.MaxAdmBytes, patterns: res}
		for i := range res {
			g.reasons = append(g.reasons, reasonUnsafeMarkup+"pattern "+strconv.Itoa(i))
		}
		return g, nil
	},
}

// Reasons and codes (200 / 354).
const (
	markupSafetyLoss     = engine.LossCreativeFilteredGeneral
	markupSafetyNBR      = engine.NBRResponseRejectedCreativeMalware
	reasonUnsafeMarkup   = "unsafe markup: "
	reasonAdmTooLarge    = reasonUnsafeMarkup + "too large"
	reasonAdmBadUTF8     = reasonUnsafeMarkup + "invalid utf-8"
	reasonForcedRedirect = reasonUnsafeMarkup + "forced redirect"
	reasonJavascriptURL  = reasonUnsafeMarkup + "javascript url"
	reasonDecodeAndRun   = reasonUnsafeMarkup + "decode-and-run"
)

// markupJSURL is a javascript: URL, beside markupjs.go's findings.
const markupJSURL uint8 = 1 << 7

// maxMarkupNesting bounds how deep markup inside markup is scanned.
const maxMarkupNesting = 4

func (g *markupSafety) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *markupSafety) Prepare(*engine.Input) string { return "" }

// CheckBid applies the checks in order and reports the first that fails.
func (g *markupSafety) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	adm := b.AdM
	switch {
	case len(adm) > g.maxAdm:
		return markupSafetyReject(reasonAdmTooLarge)
	case b.BadUTF8:
		return markupSafetyReject(reasonAdmBadUTF8)
	case adm == "":
		return engine.Pass()
	}
	f := unsafeAdm(markupBytes(adm))
	switch {
	case f&jsRedirect != 0:
		return markupSafetyReject(reasonForcedRedirect)
	case f&markupJSURL != 0:
		return markupSafetyReject(reasonJavascriptURL)
	case f&jsDecodeRun != 0:
		return markupSafetyReject(reasonDecodeAndRun)
	}
	for i, re := range g.patterns {
		if re.MatchString(adm) {
			return markupSafetyReject(g.reasons[i])
		}
	}
	return engine.Pass()
}

func markupSafetyReject(reason string) engine.Verdict {
	return engine.Reject(reason, markupSafetyLoss, markupSafetyNBR)
}

// unsafeAdm reads adm as readingsOf says and returns what it found.
func unsafeAdm(adm []byte) (found uint8) {
	r := readingsOf(adm)
	if r.native != nil {
		found |= unsafeNative(r.native, 0)
	}
	if r.xml && found&jsRedirect == 0 {
		found |= unsafeMarkup(adm, true, 0)
	}
	if r.html && found&jsRedirect == 0 {
		found |= unsafeMarkup(adm, false, 0)
	}
	return found
}

// unsafeMarkup scans HTML or XML markup at nesting depth; HTML with a
// noscript element is read as a browser that runs script reads it too.
func unsafeMarkup(s []byte, xml bool, depth int) uint8 {
	found, noscript := unsafeMarkupAs(s, xml, false, depth)
	if noscript && found&jsRedirect == 0 {
		again, _ := unsafeMarkupAs(s, false, true, depth)
		found |= again
	}
	return found
}

// unsafeMarkupAs is one reading of unsafeMarkup, scripting telling how
// noscript is read; noscript reports a noscript element in HTML.
func unsafeMarkupAs(s []byte, xml, scripting bool, depth int) (found uint8, noscript bool) {
	var t markupTokenizer
	t.reset(s, xml)
	t.scripting = scripting
	// While pendingURL, the content of a VAST URL element is matched against
	// javascript:; while pendingHTML, that of an HTMLResource is scanned;
	// while pendingScript, that of a <script> element in XML (HTML's is raw
	// text) is read as script.
	var m schemeMatch
	pendingURL, pendingHTML, pendingScript := false, false, false
	for found&jsRedirect == 0 {
		k := t.next()
		if pendingURL || pendingHTML || pendingScript {
			switch k {
			case markupComment:
				continue
			case markupText, markupCDATA:
				if pendingScript {
					flags := uint8(0)
					if k == markupText {
						flags = escEntity
					}
					found |= scanJS(t.data, flags, depth)
				} else if pendingHTML {
					found |= unsafeNested(t.data, k == markupText, depth)
				} else if d := (escDecoder{s: t.data, flags: escEntity}); m.feedFrom(&d, 0) {
					if m.state == 1 {
						found |= markupJSURL
					}
					pendingURL = false
				}
				continue
			}
			pendingURL, pendingHTML, pendingScript = false, false, false
		}
		switch k {
		case markupEOF:
			return found, t.noscript
		case markupStartTag:
			found |= unsafeTag(&t, xml, depth)
			if xml && !t.selfClosing {
				switch {
				case markupNameIs(t.name, "htmlresource"):
					pendingHTML = true
				case markupNameIs(t.name, "script"):
					pendingScript = true
				case vastURLElement(t.name) || vastClickThrough(t.name):
					m, pendingURL = schemeMatch{scheme: "javascript:"}, true
				}
			}
		case markupRawText:
			if markupNameIs(t.name, "script") {
				found |= scanJS(t.data, 0, depth)
			}
		}
	}
	return found, t.noscript
}

// unsafeTag checks the attributes of the current start tag.
func unsafeTag(t *markupTokenizer, xml bool, depth int) (found uint8) {
	meta := markupNameIs(t.name, "meta")
	for found&jsRedirect == 0 {
		name, val, ok := t.nextAttr()
		if !ok {
			break
		}
		if val == nil {
			continue
		}
		if meta && markupNameIs(name, "http-equiv") && decodedWordIs(val, "refresh") {
			found |= jsRedirect
			break
		}
		if len(name) > 2 && markupLower(name[0]) == 'o' && markupLower(name[1]) == 'n' {
			found |= scanJS(val, escEntity, depth)
		}
		if d := (escDecoder{s: val, flags: escEntity}); hasScheme(&d, 0, "javascript:") && !isTextAttribute(name) {
			found |= markupJSURL
		}
		if !xml && markupNameIs(name, "srcdoc") {
			found |= unsafeNested(val, true, depth)
		}
	}
	return found
}

// unsafeNested scans HTML held in markup (srcdoc, HTMLResource), undoing
// character references first when entities is set.
func unsafeNested(s []byte, entities bool, depth int) uint8 {
	if depth+1 >= maxMarkupNesting {
		return 0
	}
	if !entities {
		return unsafeMarkup(s, false, depth+1)
	}
	html, buf := decodeMarkup(s, escEntity)
	f := unsafeMarkup(html, false, depth+1)
	releaseUnescapedNative(buf)
	return f
}

// unsafeNative scans a native response: jstracker as HTML, and every URL it
// holds (click-throughs included) for javascript:.
func unsafeNative(s []byte, depth int) (found uint8) {
	var w nativeStrings
	w.reset(s)
	for found&jsRedirect == 0 {
		kind, b, e, ok := w.next()
		switch {
		case !ok:
			return found
		case kind == nativeHTML:
			if depth+1 < maxMarkupNesting {
				html, buf := unescapeNative(s[b:e])
				found |= unsafeMarkup(html, false, depth+1)
				releaseUnescapedNative(buf)
			}
		default:
			if d := (escDecoder{s: s[:e], flags: escJSON | escEntity}); hasScheme(&d, b, "javascript:") {
				found |= markupJSURL
			}
		}
	}
	return found
}

// decodedWordIs reports whether an attribute value, character references
// undone and surrounding HTML spaces ignored, is the lower-case word w,
// compared without case.
func decodedWordIs(val []byte, w string) bool {
	d := escDecoder{s: val, flags: escEntity}
	i, p := 0, 0
	for p < len(val) {
		c, n := d.at(p)
		p = n
		switch {
		case isHTMLSpace(c) && (i == 0 || i == len(w)):
		case i < len(w) && markupLower(c) == w[i]:
			i++
		default:
			return false
		}
	}
	return i == len(w)
}

// isTextAttribute reports the attributes whose value is only ever shown or
// read aloud, never loaded or run: alt, title, placeholder, aria-*. An alt
// text such as "JavaScript: the definitive guide" is not a javascript: URL.
func isTextAttribute(name []byte) bool {
	return markupNameIs(name, "alt") || markupNameIs(name, "title") || markupNameIs(name, "placeholder") ||
		len(name) > 5 && markupNameIs(name[:5], "aria-")
}

var _ engine.BidGate = (*markupSafety)(nil)
