package markup

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// readHTML reads b as an HTML document at nesting depth, the way a browser
// with scripting enabled builds it (WHATWG tree construction: raw text,
// script data, foreign content, breakout elements). Markup without foreign
// content or noscript is read from the tokenizer alone (readTokens).
func (a *analysis) readHTML(b []byte, depth int) {
	if !a.enter(depth) || a.done() {
		return
	}
	if needsTree(b) {
		a.readTree(b, depth)
	} else {
		a.readTokens(b, depth)
	}
	if cutInTag(b) {
		// The exchange pastes adm into its page, and document.write into
		// the document, whose markup may close the tag: it is read closed
		// too (a parse error there is the closing's, not the creative's).
		closed := append(append([]byte(nil), b...), "\"'>"...)
		probe := newAnalysis(a.lim, a.judge, a.secure)
		probe.budget, probe.observe = a.budget, a.observe
		probe.funcs, probe.refs = a.sharedFuncs()
		probe.readHTML(closed, depth)
		a.found |= probe.found &^ Unreadable
		a.insecure = a.insecure || probe.insecure
	}
}

// readTree reads b through x/net/html's tree construction.
func (a *analysis) readTree(b []byte, depth int) {
	doc, err := html.ParseWithOptions(bytes.NewReader(b), html.ParseOptionEnableScripting(true))
	if err != nil { // the open-element stack limit
		a.found |= Unreadable
		return
	}
	a.walkHTML(doc, depth)
}

// needsTree reports markup whose reading depends on tree construction:
// foreign content (<svg>, <math>: what is raw text there, and where
// breakout elements go) and <noscript> (raw text with scripting on). Any
// other markup yields, token for token, what tree construction is built
// from: the tree only moves elements (foster parenting, merged <html> and
// <body> attributes) or drops a few a browser ignores, so the tokens hold
// every script, handler and URL the tree holds, and maybe more.
func needsTree(b []byte) bool {
	for i := bytes.IndexByte(b, '<'); i >= 0; {
		rest := b[i+1:]
		if len(rest) > 0 {
			switch rest[0] | 0x20 { // the names' first letters, either case
			case 's', 'm', 'n':
				if hasPrefixFold(rest, "svg") || hasPrefixFold(rest, "math") || hasPrefixFold(rest, "noscript") {
					return true
				}
			}
		}
		j := bytes.IndexByte(rest, '<')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func hasPrefixFold(b []byte, p string) bool {
	return len(b) >= len(p) && strings.EqualFold(string(b[:len(p)]), p)
}

// readTokens reads b from x/net/html's tokenizer, which knows raw text,
// RCDATA and the script data states: each start tag is read as an element,
// script and style with the text up to their end tag. The tags are found
// by scanTags (htmlfast.go) when it can, else by the tokenizer itself.
func (a *analysis) readTokens(b []byte, depth int) {
	t := getTokenizer(b)
	defer putTokenizer(t)
	// Plain markup's tags are split as the scan reads them; others are
	// split again, or read by the tokenizer, one by one (tagOf).
	plain := plainMarkup(b)
	var attrs *[]attrSpan
	if plain {
		attrs = &t.attrs
	}
	if tags, _, ok := scanTagsAttrs(t.tags[:0], attrs, b); ok {
		t.tags = tags
		a.readScanned(t, b, plain, depth)
		return
	}
	a.readTokenizer(t, depth)
}

// readScanned reads the tags scanTags found in b, as readTokenizer reads
// the tokenizer's; plain: b is plainMarkup, its tags' attributes recorded.
func (a *analysis) readScanned(t *tokenizer, b []byte, plain bool, depth int) {
	n := html.Node{Type: html.ElementNode}
	for _, sp := range t.tags {
		if a.done() {
			return
		}
		if sp.bare {
			continue
		}
		ascii := false
		if plain {
			n.Data, n.Attr, ascii = t.scannedTag(b, sp)
		} else {
			n.Data, n.Attr = t.tagOf(b[sp.tag0:sp.tag1], false)
		}
		var content []byte
		if n.Data == "script" || n.Data == "style" {
			content = rawText(b[sp.text0:sp.text1], &t.content)
		}
		a.element(&n, content, depth, ascii)
	}
}

// readTokenizer reads the document t was started on token by token.
func (a *analysis) readTokenizer(t *tokenizer, depth int) {
	z := t.z
	n := html.Node{Type: html.ElementNode}
	for !a.done() {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		n.Data, n.Attr = t.tag()
		// A self-closing flag on <script/> or <style/> is ignored by the
		// browser (they are not void elements): the text after it is their
		// content, and the tokenizer has switched to raw text for it too.
		// The content stays in the tokenizer's buffer: what reads it
		// copies what it keeps. Reading it moves the tokenizer on: the
		// attributes are copied first.
		var content []byte
		if n.Data == "script" || n.Data == "style" {
			t.own()
			t.content = t.content[:0]
			for z.Next() == html.TextToken {
				t.content = append(t.content, z.Text()...)
			}
			content = t.content
		}
		a.element(&n, content, depth, false)
	}
}

func (a *analysis) walkHTML(n *html.Node, depth int) {
	for ; n != nil && !a.done(); n = n.NextSibling {
		if n.Type == html.ElementNode {
			a.element(n, nil, depth, false)
		}
		a.walkHTML(n.FirstChild, depth)
	}
}

// element reads one element: its script or style content and its
// attributes. content is a script's or style's text read from the
// tokenizer (nil: n's text children). lower: n's name and attribute keys
// are what strings.ToLower gives for them (ASCII in lower case), and are
// not lower-cased again.
func (a *analysis) element(n *html.Node, content []byte, depth int, lower bool) {
	name := n.Data
	if !lower {
		name = strings.ToLower(name)
	}
	switch {
	case name == "script" && runsAsScript(n):
		a.readScript(elementText(n, content), ctxForced, false, depth)
	case name == "style" && a.secure:
		a.readCSS(elementText(n, content))
	case name == "noscript" && n.Namespace == "":
		// Raw text to a browser that runs script, markup to one that does
		// not: read as markup too.
		a.readHTML(elementText(n, content), depth+1)
	case name == "meta" && a.judge && strings.EqualFold(strings.Trim(attr(n, "http-equiv"), htmlSpace), "refresh"):
		a.found |= ForcedRedirect
	}
	for _, at := range n.Attr {
		key := at.Key
		if !lower {
			key = strings.ToLower(key)
		}
		if a.secure {
			a.secureAttr(n, name, key, at, depth)
		}
		if !a.judge {
			continue
		}
		switch {
		case at.Namespace == "" && len(key) > 2 && key[:2] == "on":
			a.readScript([]byte(at.Val), eventContext(key[2:]), true, depth)
		case key == "srcdoc" && name == "iframe" && n.Namespace == "":
			a.readHTML([]byte(at.Val), depth+1)
		case isURLAttr(key):
			a.urlAttr(n, name, key, at.Val, depth)
		}
	}
}

// urlAttr reads a URL attribute: a javascript: URL is script, run on a
// click in the href of a link, without a gesture elsewhere; a data: URL in a
// frame, object or embed is a document of its own.
func (a *analysis) urlAttr(n *html.Node, name, key, val string, depth int) {
	link := key == "href" && (name == "a" || name == "area")
	frame := (key == "src" && (name == "iframe" || name == "frame" || name == "embed")) || (key == "data" && name == "object")
	if code, ok := javascriptURL(val); ok {
		if link {
			a.readScript(code, ctxGesture, true, depth+1)
			return
		}
		a.readFrameScript(code, depth+1)
		return
	}
	if frame {
		if doc, ok := dataDocument(val); ok {
			a.readFrameHTML(doc, depth+1)
		}
	}
}

// readFrameScript reads a javascript: URL that runs without a gesture in a
// context of its own: navigating or decoding-and-running is JavascriptURL.
func (a *analysis) readFrameScript(code []byte, depth int) {
	s := a.sub()
	s.readScript(code, ctxForced, true, depth)
	a.frameResult(s.result())
}

// readFrameHTML reads the document of a data: URL frame.
func (a *analysis) readFrameHTML(doc []byte, depth int) {
	if !a.spend(len(doc)) {
		return
	}
	s := a.sub()
	s.readHTML(doc, depth)
	a.frameResult(s.result())
}

func (a *analysis) frameResult(f Finding) {
	a.found |= f & Unreadable
	if f&(ForcedRedirect|JavascriptURL|DecodeAndRun) != 0 {
		a.found |= JavascriptURL
	}
}

// secureAttr checks an attribute that loads a resource.
func (a *analysis) secureAttr(n *html.Node, name, key string, at html.Attribute, depth int) {
	svg := n.Namespace == "svg"
	switch {
	case key == "src", key == "data" && name == "object", key == "poster", key == "background",
		key == "href" && (name == "link" || name == "base") && !svg,
		key == "href" && svg && (name == "image" || name == "use" || name == "feimage" || name == "script"),
		key == "action" && name == "form", key == "formaction":
		if InsecureURL(at.Val) {
			a.insecure = true
		}
	case key == "srcset", key == "imagesrcset":
		for _, u := range srcsetURLs(at.Val) {
			if InsecureURL(u) {
				a.insecure = true
			}
		}
	case key == "style":
		a.readCSS([]byte(at.Val))
	case key == "srcdoc" && name == "iframe" && !svg:
		a.readHTML([]byte(at.Val), depth+1)
	}
}

const htmlSpace = " \t\n\f\r"

// isHTMLSpace reports a byte of htmlSpace.
func isHTMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// attr is the value of the attribute key (lower case) of n, "" when absent.
func attr(n *html.Node, key string) string {
	for _, at := range n.Attr {
		if at.Namespace == "" && strings.EqualFold(at.Key, key) {
			return at.Val
		}
	}
	return ""
}

// elementText is content, or n's text children when content is nil.
func elementText(n *html.Node, content []byte) []byte {
	if content != nil {
		return content
	}
	return childText(n)
}

// childText joins n's text children: the content of a script or style.
func childText(n *html.Node) []byte {
	var b []byte
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b = append(b, c.Data...)
		}
	}
	return b
}

// runsAsScript reports whether a script element runs as JavaScript: no
// type, or a JavaScript MIME type or "module" (HTML's list), in HTML or
// SVG.
func runsAsScript(n *html.Node) bool {
	t := strings.ToLower(strings.Trim(attr(n, "type"), htmlSpace))
	if t == "" {
		l := strings.ToLower(attr(n, "language"))
		return l == "" || strings.HasPrefix(l, "javascript") || l == "jscript" || l == "livescript" || l == "ecmascript"
	}
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = strings.TrimRight(t[:i], htmlSpace)
	}
	switch t {
	case "module", "text/javascript", "application/javascript", "application/ecmascript", "application/x-ecmascript",
		"application/x-javascript", "text/ecmascript", "text/javascript1.0", "text/javascript1.1", "text/javascript1.2",
		"text/javascript1.3", "text/javascript1.4", "text/javascript1.5", "text/jscript", "text/livescript",
		"text/x-ecmascript", "text/x-javascript":
		return true
	}
	return false
}

// isURLAttr reports the attributes whose value is a URL a browser may
// navigate to or load (HTML and SVG); text attributes (title, alt, data-*)
// are never URLs.
func isURLAttr(key string) bool {
	switch key {
	case "href", "src", "action", "formaction", "data", "xlink:href", "poster", "background", "codebase",
		"cite", "longdesc", "lowsrc", "dynsrc", "ping", "manifest", "icon", "archive", "classid", "to", "values", "from", "by":
		return true
	}
	return false
}

// cutInTag reports markup that ends inside a tag (which a browser drops):
// inside a start tag, to the tokenizer (scanTags tells, else the tokenizer
// itself).
func cutInTag(b []byte) bool {
	// The last byte that is no HTML space (bytes.TrimRight, without
	// building its byte set on every call).
	last := len(b) - 1
	for last >= 0 && isHTMLSpace(b[last]) {
		last--
	}
	if last < 0 || b[last] == '>' || bytes.IndexByte(b, '<') < 0 {
		return false
	}
	tz := getTokenizer(b)
	defer putTokenizer(tz)
	if tags, cut, ok := scanTags(tz.tags[:0], b); ok {
		tz.tags = tags
		return cut
	}
	return tokenizerCut(tz.z)
}

// tokenizerCut reports whether z's document ends inside a start tag: its
// last token, an error, is raw bytes of one.
func tokenizerCut(z *html.Tokenizer) bool {
	for z.Next() != html.ErrorToken {
	}
	raw := z.Raw()
	return len(raw) > 1 && raw[0] == '<' && raw[1] != '/' && raw[1] != '!'
}
