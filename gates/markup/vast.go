package markup

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"unsafe"

	"golang.org/x/net/html"
)

// VAST is read with encoding/xml, as a player's XML parser reads it: the
// text of an element is its character data, CDATA sections and character
// and predefined entity references included, with comments and processing
// instructions inside it skipped. A DOCTYPE with an internal subset or an
// entity declaration, or a document the reader cannot read to its end, is
// Unreadable. A well-formed document is read by the fast path of
// vastfast.go instead, to the same result; encoding/xml is the reference
// it is tested against and reads everything else.

// looksLikeVAST reports markup that opens (after an XML declaration,
// comments and a DOCTYPE) with a VAST element.
func looksLikeVAST(s []byte) bool {
	if vast, ok := sniffVAST(unsafe.String(unsafe.SliceData(s), len(s))); ok {
		return vast
	}
	return looksLikeVASTXML(s)
}

// looksLikeVASTXML is looksLikeVAST with encoding/xml: the reference, and
// the answer when sniffVAST has none.
func looksLikeVASTXML(s []byte) bool {
	d := xml.NewDecoder(bytes.NewReader(s))
	d.Strict = false
	d.CharsetReader = identityCharset
	for i := 0; i < 64; i++ {
		t, err := d.RawToken()
		if err != nil {
			return false
		}
		switch t := t.(type) {
		case xml.StartElement:
			return strings.EqualFold(t.Name.Local, "vast")
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return false
			}
		}
	}
	return false
}

func identityCharset(_ string, r io.Reader) (io.Reader, error) { return r, nil }

// vastElement is what a VAST element's text is.
type vastElement uint8

const (
	vastOther  vastElement = iota
	vastLoaded             // a URL the player loads or calls without a gesture
	vastClick              // a URL opened or called on a click
	vastFrame              // IFrameResource: a document in a frame
	vastHTML               // HTMLResource: markup
)

// vastElements classifies the VAST 2-4.x elements by lower-case name.
var vastElements = map[string]vastElement{
	"mediafile": vastLoaded, "impression": vastLoaded, "tracking": vastLoaded, "error": vastLoaded,
	"staticresource": vastLoaded, "javascriptresource": vastLoaded, "executableresource": vastLoaded,
	"vastadtaguri": vastLoaded, "viewable": vastLoaded, "notviewable": vastLoaded, "viewundetermined": vastLoaded,
	"interactivecreativefile": vastLoaded, "closedcaptionfile": vastLoaded, "iconviewtracking": vastLoaded,
	"mezzanine":     vastLoaded,
	"clicktracking": vastClick, "companionclicktracking": vastClick, "iconclicktracking": vastClick,
	"nonlinearclicktracking": vastClick, "clickthrough": vastClick, "iconclickthrough": vastClick,
	"companionclickthrough": vastClick, "nonlinearclickthrough": vastClick,
	"iframeresource": vastFrame, "htmlresource": vastHTML,
}

// vastNames are the lower-case names of the VAST elements as the standard
// spells them: an element so spelled costs no lower-casing.
var vastNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"VAST", "Ad", "InLine", "Wrapper", "AdSystem", "AdTitle", "AdServingId", "Description",
		"Advertiser", "Pricing", "Survey", "Category", "Expires", "Error", "Impression", "Creatives", "Creative",
		"UniversalAdId", "Linear", "NonLinear", "NonLinearAds", "CompanionAds", "Companion", "Duration",
		"TrackingEvents", "Tracking", "VideoClicks", "ClickThrough", "ClickTracking", "CustomClick", "MediaFiles",
		"MediaFile", "Mezzanine", "InteractiveCreativeFile", "ClosedCaptionFiles", "ClosedCaptionFile", "Icons",
		"Icon", "IconClicks", "IconClickThrough", "IconClickTracking", "IconViewTracking", "StaticResource",
		"IFrameResource", "HTMLResource", "JavaScriptResource", "ExecutableResource", "AdParameters",
		"CreativeExtensions", "CreativeExtension", "Extensions", "Extension", "AdVerifications", "Verification",
		"VerificationParameters", "ViewableImpression", "Viewable", "NotViewable", "ViewUndetermined",
		"VASTAdTagURI", "CompanionClickThrough", "CompanionClickTracking", "NonLinearClickThrough",
		"NonLinearClickTracking", "AltText", "BlockedAdCategories"} {
		m[n] = strings.ToLower(n)
	}
	return m
}()

// vastName is an element's local name in lower case.
func vastName(local string) string {
	if n, ok := vastNames[local]; ok {
		return n
	}
	return strings.ToLower(local)
}

// vastClickThrough reports the click-throughs, which secureMarkup leaves
// alone (the user leaves the ad).
func vastClickThrough(name string) bool { return strings.HasSuffix(name, "clickthrough") }

// readVAST reads b as VAST at depth. An element's text is read twice when
// it holds child elements: its own text (the pieces around the children,
// joined) and, for the outermost element the gates read, all the text
// inside it, as a player's XML DOM gives it (textContent).
//
// Anything but white space, comments and processing instructions after the
// root element is Unreadable (an XML parser rejects it) unless trailingOK
// (the HTML reading reads it).
func (a *analysis) readVAST(b []byte, depth int, trailingOK bool) {
	if !a.enter(depth) || a.done() || a.readVASTFast(b, depth) {
		return
	}
	a.readVASTXML(b, depth, trailingOK)
}

// readVASTXML is readVAST with encoding/xml: the reference reading, and
// the reading of anything readVASTFast does not read.
func (a *analysis) readVASTXML(b []byte, depth int, trailingOK bool) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	d.CharsetReader = identityCharset
	// One frame per open element; a popped frame's text buffer is reused
	// by the next element opened at its depth.
	type frame struct {
		name string
		own  []byte
	}
	var stack []frame
	outer := -1 // the outermost open element the gates read
	rootClosed := false
	var content strings.Builder
	closeFrame := func() {
		f := &stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if vastElements[f.name] != vastOther && len(f.own) > 0 {
			a.vastText(f.name, string(f.own), depth)
		}
		if outer == len(stack) {
			if c := content.String(); c != string(f.own) {
				a.vastText(f.name, c, depth)
			}
			outer = -1
			content.Reset()
		}
	}
	for !a.done() {
		t, err := d.Token()
		if err == io.EOF {
			if len(stack) > 0 {
				a.found |= Unreadable // cut off
			}
			for len(stack) > 0 {
				closeFrame()
			}
			return
		}
		if err != nil {
			a.found |= Unreadable
			if a.secure {
				a.readVASTTolerant(b, depth)
			}
			return
		}
		if rootClosed && !trailingOK {
			switch t := t.(type) {
			case xml.StartElement, xml.EndElement, xml.Directive:
				a.found |= Unreadable
			case xml.CharData:
				if len(bytes.TrimSpace(t)) > 0 {
					a.found |= Unreadable
				}
			}
		}
		switch t := t.(type) {
		case xml.StartElement:
			name := vastName(t.Name.Local)
			if outer < 0 && vastElements[name] != vastOther {
				outer = len(stack)
			}
			if len(stack) < cap(stack) {
				stack = stack[:len(stack)+1]
				stack[len(stack)-1] = frame{name: name, own: stack[len(stack)-1].own[:0]}
			} else {
				stack = append(stack, frame{name: name})
			}
		case xml.EndElement:
			if len(stack) > 0 {
				closeFrame()
				rootClosed = len(stack) == 0
			}
		case xml.CharData:
			if len(stack) > 0 {
				f := &stack[len(stack)-1]
				f.own = append(f.own, t...)
			}
			if outer >= 0 {
				content.Write(t)
			}
		case xml.Directive:
			if bytes.IndexByte(t, '[') >= 0 || bytes.HasPrefix(bytes.TrimSpace(t), []byte("ENTITY")) {
				a.found |= Unreadable
				if a.secure {
					a.insecure = a.insecure || bytes.Contains(bytes.ToLower(t), []byte("http:"))
				}
				return
			}
		}
	}
}

// vastText reads the text of the element name.
//
// text may point into the adm or into a pooled buffer (readVASTFast): it
// is valid during the call only and must not be retained.
func (a *analysis) vastText(name, text string, depth int) {
	if a.observeVAST != nil {
		a.observeVAST(name, text)
	}
	kind := vastElements[name]
	u := strings.TrimSpace(text)
	if kind == vastHTML {
		a.readHTML([]byte(text), depth+1)
		return
	}
	if a.secure && (kind == vastLoaded || kind == vastFrame || kind == vastClick && !vastClickThrough(name)) && InsecureURL(u) {
		a.insecure = true
	}
	if !a.judge {
		return
	}
	switch kind {
	case vastLoaded, vastFrame:
		if code, ok := javascriptURL(u); ok {
			a.readFrameScript(code, depth+1)
		} else if doc, ok := dataDocument(u); ok && kind == vastFrame {
			a.readFrameHTML(doc, depth+1)
		}
	case vastClick:
		if code, ok := javascriptURL(u); ok {
			a.readScript(code, ctxGesture, true, depth+1)
		}
	}
}

// readVASTTolerant reads VAST that is not well-formed for Insecure, the way
// an HTML parser splits it: the text of a VAST element is its text and the
// CDATA sections (comments to an HTML parser) inside it.
func (a *analysis) readVASTTolerant(b []byte, depth int) {
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		return
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for ; n != nil && !a.insecure; n = n.NextSibling {
			if n.Type == html.ElementNode {
				if _, ok := vastElements[n.Data]; ok {
					var t strings.Builder
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						switch {
						case c.Type == html.TextNode:
							t.WriteString(c.Data)
						case c.Type == html.CommentNode && strings.HasPrefix(c.Data, "[CDATA["):
							t.WriteString(strings.TrimSuffix(strings.TrimPrefix(c.Data, "[CDATA["), "]]"))
						}
					}
					a.vastText(n.Data, t.String(), depth)
				}
			}
			walk(n.FirstChild)
		}
	}
	walk(doc)
}
