package gates

// Markup scanning shared by the gates that read adm (secureMarkup, and
// markupSafety after it). This file: an in-place HTML/XML tokenizer.
// markupdecode.go: a lazy decoder for the escapes a bidder may hide a URL
// behind. markupurl.go: URL-scheme matching with the WHATWG URL parser's
// whitespace rules, and iterators over the URLs of srcset and CSS. native.go:
// a tolerant walk over native JSON. Everything reads the caller's bytes in
// place, allocates nothing, never fails on malformed input and runs in time
// linear in the input (lookahead is bounded; no regular expressions).

import (
	"bytes"
	"unsafe"

	"github.com/bidguard/bidguard/jsonraw"
)

// markupBytes views s as bytes without copying. The result must never be written.
func markupBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// markupTokenKind is the kind of a markup token.
type markupTokenKind uint8

const (
	markupEOF      markupTokenKind = iota
	markupText                     // data: text as written (references not decoded)
	markupStartTag                 // name; attributes through nextAttr; selfClosing
	markupEndTag                   // name
	markupComment                  // data: the body (also of bogus comments: </ x>)
	markupCDATA                    // data: the section's body (XML mode only)
	markupDecl                     // data: <!DOCTYPE ...>, <?xml ...?>, between the delimiters
	markupRawText                  // name: the element; data: the body of script, style, ... (HTML mode)
)

// markupTokenizer walks HTML, or XML such as VAST, in place, the way the HTML
// parsing algorithm splits its input: a '<' that does not start a tag, comment
// or declaration is text (`< MediaFile>` too). A tag cut off by the end of the
// input is still a tag with the attributes read so far. In XML mode
// `<![CDATA[` opens a CDATA section and no element holds raw text; in HTML
// mode `<![CDATA[` is a bogus comment and script, style, textarea, title, xmp,
// iframe, noembed, noframes and plaintext hold raw text up to their end tag
// (noscript too when scripting is set, as in a browser that runs script).
// Tokens point into the input and are valid until the next call. It never
// fails and allocates nothing. The zero value is at EOF; reset starts it.
type markupTokenizer struct {
	s         []byte
	p         int
	xml       bool
	scripting bool
	noscript  bool // a noscript start tag was read (HTML mode)

	kind        markupTokenKind
	name, data  []byte
	selfClosing bool
	attrs       []byte // the current tag's bytes between its name and its '>'
	raw         []byte // element whose raw text comes next, nil when none

	// The spans, in attrs, of the current tag's first attributes; nextAttr
	// reads them (index ai), then parses again from resume (-1: no more).
	cached      [maxCachedAttrs]attrSpan
	nCached, ai int
	resume      int
}

// reset starts tokenizing s in XML mode or HTML mode.
func (t *markupTokenizer) reset(s []byte, xml bool) { *t = markupTokenizer{s: s, xml: xml} }

// next moves to the next token and returns its kind.
func (t *markupTokenizer) next() markupTokenKind {
	t.name, t.data, t.attrs, t.selfClosing = nil, nil, nil, false
	t.nCached, t.ai, t.resume = 0, 0, -1
	s, p := t.s, t.p
	if p >= len(s) {
		t.kind = markupEOF
		return markupEOF
	}
	if t.raw != nil {
		end := rawTextEnd(s, p, t.raw)
		t.kind, t.name, t.data, t.p, t.raw = markupRawText, t.raw, s[p:end], end, nil
		return markupRawText
	}
	if s[p] == '<' && p+1 < len(s) {
		switch c := s[p+1]; {
		case isMarkupLetter(c):
			return t.tag(p, p+1, markupStartTag)
		case c == '/':
			if p+2 < len(s) && isMarkupLetter(s[p+2]) {
				return t.tag(p, p+2, markupEndTag)
			}
			end, next := markupIndex(s, p+2, ">", len(s))
			return t.emit(markupComment, s[p+2:end], next)
		case c == '!':
			return t.bang(p)
		case c == '?':
			if t.xml {
				end, next := markupIndex(s, p+2, "?>", len(s))
				return t.emit(markupDecl, s[p+2:end], next)
			}
			end, next := markupIndex(s, p+2, ">", len(s))
			return t.emit(markupComment, s[p+1:end], next)
		}
	}
	// Text runs to the next '<' that starts markup.
	i := p + 1
	for {
		j := bytes.IndexByte(s[i:], '<')
		if j < 0 {
			return t.emit(markupText, s[p:], len(s))
		}
		i += j
		if i+1 < len(s) && (isMarkupLetter(s[i+1]) || s[i+1] == '/' || s[i+1] == '!' || s[i+1] == '?') {
			return t.emit(markupText, s[p:i], i)
		}
		i++
	}
}

func (t *markupTokenizer) emit(k markupTokenKind, data []byte, next int) markupTokenKind {
	t.kind, t.data, t.p = k, data, next
	return k
}

// bang handles `<!`: comments, CDATA sections, declarations.
func (t *markupTokenizer) bang(p int) markupTokenKind {
	s := t.s
	rest := s[p+2:]
	if bytes.HasPrefix(rest, []byte("--")) {
		b := p + 4
		// <!--> and <!---> are empty comments.
		if b < len(s) && s[b] == '>' {
			return t.emit(markupComment, nil, b+1)
		}
		if b+1 < len(s) && s[b] == '-' && s[b+1] == '>' {
			return t.emit(markupComment, nil, b+2)
		}
		for i := b; ; {
			j := bytes.Index(s[i:], []byte("--"))
			if j < 0 {
				return t.emit(markupComment, s[b:], len(s))
			}
			i += j
			if i+2 < len(s) && s[i+2] == '>' {
				return t.emit(markupComment, s[b:i], i+3)
			}
			if i+3 < len(s) && s[i+2] == '!' && s[i+3] == '>' {
				return t.emit(markupComment, s[b:i], i+4)
			}
			i++
		}
	}
	if bytes.HasPrefix(rest, []byte("[CDATA[")) {
		if t.xml {
			b := p + 9
			end, next := markupIndex(s, b, "]]>", len(s))
			return t.emit(markupCDATA, s[b:end], next)
		}
		end, next := markupIndex(s, p+2, ">", len(s))
		return t.emit(markupComment, s[p+2:end], next)
	}
	end, next := markupIndex(s, p+2, ">", len(s))
	return t.emit(markupDecl, s[p+2:end], next)
}

// tag reads a start or end tag whose name starts at n. A tag the input cuts
// off before its '>' (or inside a quoted value) keeps what it holds: adm is
// pasted into a page whose markup may well close it. The first attributes'
// spans are kept for nextAttr.
func (t *markupTokenizer) tag(p, n int, k markupTokenKind) markupTokenKind {
	s := t.s
	e := n
	for e < len(s) && markupClass[s[e]]&markupClsTagNameEnd == 0 {
		e++
	}
	i, next := e, len(s)
	self := false
	t.nCached, t.ai, t.resume = 0, 0, -1
	for {
		a, nx, sc, ok := scanAttr(s, i)
		if a.nb >= 0 {
			if t.nCached < len(t.cached) {
				t.cached[t.nCached] = a.rebase(e)
				t.nCached++
			} else if t.resume < 0 {
				t.resume = i - e
			}
		}
		i, self = nx, sc
		if !ok {
			i, self = len(s), false
			break
		}
		if i < len(s) && s[i] == '>' {
			next = i + 1
			break
		}
	}
	t.kind, t.name, t.attrs, t.p = k, s[n:e], s[e:i], next
	if k == markupStartTag {
		t.selfClosing = self
		if !t.xml && markupNameIs(t.name, "noscript") {
			t.noscript = true
			if t.scripting {
				t.raw = t.name
			}
		} else if !t.xml && isRawTextElement(t.name) {
			t.raw = t.name
		}
	}
	return k
}

// attrSpan locates an attribute: its name s[nb:ne] and value s[vb:ve]; nb is
// -1 when there is none, vb -1 when it has no value.
type attrSpan struct{ nb, ne, vb, ve int32 }

func (a attrSpan) rebase(base int) attrSpan {
	b := int32(base)
	a.nb, a.ne = a.nb-b, a.ne-b
	if a.vb >= 0 {
		a.vb, a.ve = a.vb-b, a.ve-b
	}
	return a
}

// scanAttr reads the attribute at i in the HTML way: spaces and slashes
// before it are skipped; a name runs to a space, '/', '>' or '=' (a leading
// '=' belongs to it); a value is quoted or runs to a space or '>'. At the
// tag's '>' it returns no attribute and next at the '>'. When the input ends
// first, ok is false and what was read is returned (an unclosed quoted value
// runs to the end). self reports a "/>".
func scanAttr(s []byte, i int) (a attrSpan, next int, self, ok bool) {
	a = attrSpan{-1, -1, -1, -1}
	for i < len(s) && (markupClass[s[i]]&markupClsSpace != 0 || s[i] == '/') {
		self = s[i] == '/'
		i++
	}
	if i >= len(s) {
		return a, i, false, false
	}
	if s[i] == '>' {
		return a, i, self, true
	}
	b := i
	i++
	for i < len(s) && markupClass[s[i]]&markupClsAttrNameEnd == 0 {
		i++
	}
	a.nb, a.ne = int32(b), int32(i)
	j := i
	for j < len(s) && markupClass[s[j]]&markupClsSpace != 0 {
		j++
	}
	if j >= len(s) || s[j] != '=' {
		return a, i, false, i < len(s)
	}
	j++
	for j < len(s) && markupClass[s[j]]&markupClsSpace != 0 {
		j++
	}
	if j >= len(s) {
		return a, j, false, false
	}
	if q := s[j]; q == '"' || q == '\'' {
		k := bytes.IndexByte(s[j+1:], q)
		if k < 0 {
			a.vb, a.ve = int32(j+1), int32(len(s))
			return a, len(s), false, false
		}
		a.vb, a.ve = int32(j+1), int32(j+1+k)
		return a, j + 2 + k, false, true
	}
	k := j
	for k < len(s) && markupClass[s[k]]&markupClsValueEnd == 0 {
		k++
	}
	a.vb, a.ve = int32(j), int32(k)
	return a, k, false, k < len(s)
}

// nextAttr returns the current start tag's next attribute: its name and its
// value as written (character references not decoded; nil when it has none).
func (t *markupTokenizer) nextAttr() (name, val []byte, ok bool) {
	var a attrSpan
	switch {
	case t.ai < t.nCached:
		a = t.cached[t.ai]
		t.ai++
	case t.resume >= 0:
		a, t.resume, _, _ = scanAttr(t.attrs, t.resume)
		if a.nb < 0 {
			t.resume = -1
			return nil, nil, false
		}
	default:
		return nil, nil, false
	}
	name = t.attrs[a.nb:a.ne]
	if a.vb >= 0 {
		val = t.attrs[a.vb:a.ve]
	}
	return name, val, true
}

// rawTextEnd finds the end tag of the raw-text element name from p: the index
// of its "</", or len(s). plaintext never ends.
func rawTextEnd(s []byte, p int, name []byte) int {
	switch {
	case markupNameIs(name, "plaintext"):
		return len(s)
	case markupNameIs(name, "script"):
		return scriptEnd(s, p)
	}
	for i := p; ; {
		j := bytes.Index(s[i:], []byte("</"))
		if j < 0 {
			return len(s)
		}
		i += j
		e := i + 2 + len(name)
		if e <= len(s) && bytes.EqualFold(s[i+2:e], name) && (e == len(s) || markupClass[s[e]]&markupClsTagNameEnd != 0) {
			return i
		}
		i += 2
	}
}

// scriptEnd finds the end tag of a script element from p as the HTML
// tokenizer does, with its escaped states: after "<!--", a "<script" start
// tag opens a double-escaped run in which "</script" does not end the
// element but returns to the escaped state; "-->" returns to plain script.
// So "<script><!--<script></script>\nx()</script>" is one element whose
// code runs x().
func scriptEnd(s []byte, p int) int {
	const (
		plain = iota
		escaped
		double
	)
	st := plain
	for i := p; i < len(s); i++ {
		switch s[i] {
		case '-':
			if st != plain && i+2 < len(s) && s[i+1] == '-' && s[i+2] == '>' {
				st, i = plain, i+2
			}
		case '<':
			switch {
			case st == plain && i+3 < len(s) && s[i+1] == '!' && s[i+2] == '-' && s[i+3] == '-':
				// "<!--" opens the escaped state; "<!-->" closes it again,
				// as its dashes are read once more as part of "-->".
				st, i = escaped, i+1
			case i+1 < len(s) && s[i+1] == '/' && tagNameAt(s, i+2, "script"):
				if st != double {
					return i
				}
				st = escaped
			case st == escaped && tagNameAt(s, i+1, "script"):
				st = double
			}
		}
	}
	return len(s)
}

// tagNameAt reports whether s[p:] starts with the tag name name (any case)
// followed by what ends a tag name (space, '/', '>').
func tagNameAt(s []byte, p int, name string) bool {
	e := p + len(name)
	return e < len(s) && markupNameIs(s[p:e], name) && markupClass[s[e]]&markupClsTagNameEnd != 0
}

func isRawTextElement(name []byte) bool {
	switch len(name) {
	case 3:
		return markupNameIs(name, "xmp")
	case 5:
		return markupNameIs(name, "style") || markupNameIs(name, "title")
	case 6:
		return markupNameIs(name, "script") || markupNameIs(name, "iframe")
	case 7:
		return markupNameIs(name, "noembed")
	case 8:
		return markupNameIs(name, "textarea") || markupNameIs(name, "noframes")
	case 9:
		return markupNameIs(name, "plaintext")
	}
	return false
}

// markupIndex finds sep in s[from:limit]: it returns where it starts and the
// index after it, or limit twice when absent (an unterminated construct runs
// to the end).
func markupIndex(s []byte, from int, sep string, limit int) (end, next int) {
	if from > limit {
		return limit, limit
	}
	j := bytes.Index(s[from:limit], markupBytes(sep))
	if j < 0 {
		return limit, limit
	}
	return from + j, from + j + len(sep)
}

// admReadings is how the markup gates read an adm, as whatever renders it
// may: native (the JSON object, when adm starts with '{'), XML, HTML, one or
// more of them.
type admReadings struct {
	native []byte
	xml    bool
	html   bool
}

// readingsOf routes adm: native JSON when it starts (after spaces) with
// '{', and HTML too when bytes follow the object or it never closes (a
// renderer may take it for markup); VAST as XML; other XML as XML and as
// HTML (a page: a browser ignores the prolog and parses HTML, where a '<'
// in a script opens no tag and CDATA ends at the first '>'); anything else
// as HTML.
func readingsOf(adm []byte) (r admReadings) {
	i := 0
	for i < len(adm) && isHTMLSpace(adm[i]) {
		i++
	}
	if i < len(adm) && adm[i] == '{' {
		r.native = adm[i:]
		end := jsonraw.ValueEnd(r.native, 0)
		r.html = end < 0 || len(bytes.TrimLeft(r.native[end:], " \t\r\n\f")) > 0
		return r
	}
	xml, vast := markupKind(adm)
	r.xml, r.html = xml, !vast
	return r
}

// markupKind reads the start of markup (after a byte-order mark, spaces and
// comments): xml when it is an XML document, that is it starts with
// "<?xml" or its first element is VAST; vast when its first element is VAST.
func markupKind(s []byte) (xml, vast bool) {
	s = bytes.TrimPrefix(s, []byte("\xef\xbb\xbf"))
	var t markupTokenizer
	t.reset(s, false)
	for {
		switch t.next() {
		case markupEOF:
			return xml, false
		case markupStartTag:
			vast = markupNameIs(t.name, "vast")
			return xml || vast, vast
		case markupComment:
			if len(t.data) >= 4 && markupNameIs(t.data[:4], "?xml") {
				xml = true
			}
		case markupText:
			if len(bytes.TrimLeft(t.data, " \t\r\n\f")) > 0 {
				return xml, false
			}
		}
	}
}

// maxCachedAttrs is how many attribute spans a tag keeps (ad markup rarely
// has more; the rest are parsed again).
const maxCachedAttrs = 16

// Character classes of the tokenizer.
const (
	markupClsSpace       = 1 << iota // HTML whitespace
	markupClsTagNameEnd              // space, '/', '>'
	markupClsAttrNameEnd             // space, '/', '>', '='
	markupClsValueEnd                // space, '>' (an unquoted value)
)

var markupClass = func() (t [256]uint8) {
	for _, c := range []byte(" \t\n\r\f") {
		t[c] = markupClsSpace | markupClsTagNameEnd | markupClsAttrNameEnd | markupClsValueEnd
	}
	t['/'] = markupClsTagNameEnd | markupClsAttrNameEnd
	t['>'] = markupClsTagNameEnd | markupClsAttrNameEnd | markupClsValueEnd
	t['='] = markupClsAttrNameEnd
	return t
}()

func isMarkupLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isHTMLSpace(c byte) bool { return markupClass[c]&markupClsSpace != 0 }

// markupNameIs compares b with the lower-case ASCII word w, ignoring ASCII case.
func markupNameIs(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if markupLower(b[i]) != w[i] {
			return false
		}
	}
	return true
}

func markupLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
