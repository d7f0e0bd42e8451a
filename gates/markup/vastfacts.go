package markup

// VAST facts: what a video or audio creative declares about itself (its
// VAST version, whether it is an inline ad or a wrapper, the inline ad's
// duration and MediaFile types), read by a strict, linear-time scanner
// that allocates nothing.
//
// adm is VAST when, after one optional U+FEFF and any XML whitespace, it is
// a well-formed XML 1.0 document (one root element, tags closed in order,
// attribute values quoted and not repeated, only the five predefined
// entities and character references; read as UTF-8 whatever its XML
// declaration says) whose root element is VAST (version attribute
// required), VideoAdServingTemplate (VAST 1.0, version 1.0) or DAAST
// (version required), and whose root holds an Ad child holding an InLine
// or Wrapper child. The first such Ad is the markup's ad. Names compare by
// local name (a namespace prefix is dropped), case-sensitively. A DOCTYPE
// makes the document malformed: no DTD is read and no entity is expanded
// (XXE, "billion laughs"). Anything else is no VAST (Kind NoVAST): HTML,
// JSON, a URL, an empty adm, VAST wrapped in CDATA or XML-escaped, and
// malformed VAST.
//
// Two limits keep the scanner linear without allocating: elements nest at
// most maxVASTDepth deep and a start tag carries at most maxVASTAttrs
// attributes (real VAST nests about 8 deep and carries under 10). A
// document past either is read as no VAST, as a malformed one is.
//
// Why a hand-written scanner: the rules above are a well-formedness check
// (tags closed in order, unique attributes, references limited to the
// predefined five, no DOCTYPE), which encoding/xml makes only while
// allocating per token, and which github.com/tdewolff/parse/v2/xml's
// zero-copy lexer does not make at all (it accepts mismatched end tags,
// repeated attributes and undefined entities, and wants its input in a
// NUL-terminated buffer). With the lexer the checks would still be ours to
// write, over a token stream that alone costs as much as this whole
// reading: measured side by side on the 1.6 KB inline VAST 4.2 ad of
// vastfacts_test.go (BenchmarkVASTFacts; the lexer in a throwaway module,
// looping over Next until its error token), 21-27 µs and 0 allocations for
// ReadVAST against 20-22 µs and 1 allocation for the lexer's tokens alone,
// on a 2-core machine shared with other builds (the ratio, not the
// figures, is the point). FuzzVASTFacts checks every document this reader
// accepts against encoding/xml's strict reading.

import (
	"strings"
	"unicode/utf8"
)

// VASTKind is the kind of the markup's ad.
type VASTKind uint8

const (
	// NoVAST: the markup is not VAST as defined above.
	NoVAST VASTKind = iota
	// VASTInLine: the ad holds an InLine.
	VASTInLine
	// VASTWrapper: the ad holds a Wrapper.
	VASTWrapper
)

func (k VASTKind) String() string {
	switch k {
	case VASTInLine:
		return "inline"
	case VASTWrapper:
		return "wrapper"
	}
	return "none"
}

// VASTFacts is what ReadVAST found. The zero value is no VAST. Strings are
// substrings of the markup read (except a MediaFile type written with a
// character reference, decoded into a new string).
type VASTFacts struct {
	Kind VASTKind
	// DAAST is true for a DAAST root.
	DAAST bool
	// Version is the root's version attribute as written, trimmed of XML
	// whitespace ("1.0" for a VideoAdServingTemplate root).
	Version string
	// Protocol is the AdCOM 1.0 Creative Subtype (Audio/Video) of the
	// version and kind (1-16), 0 when the version has none (VAST 4.4, 5.0).
	Protocol int
	// Duration is the inline ad's duration in whole seconds (halves up),
	// 0 when it has none.
	Duration int
	// MediaTypes counts the inline ad's MediaFiles with a non-empty type;
	// FirstMediaType is the first of them, parameters after ';' dropped and
	// trimmed, in the case written.
	MediaTypes     int
	FirstMediaType string
	// MediaTypeAccepted is true when one of them is in ReadVAST's accept
	// list (both read by MediaType, ASCII case ignored).
	MediaTypeAccepted bool
}

// Limits of the scanner (see the file comment).
const (
	maxVASTDepth = 256
	maxVASTAttrs = 64
)

// Root elements read as VAST.
const (
	rootNone uint8 = iota
	rootVAST
	rootVAST1 // VideoAdServingTemplate
	rootDAAST
)

// ReadVAST reads the VAST facts of adm; accept lists the media types
// (MIME types, as a bid request's mimes) against which the inline ad's
// MediaFile types are compared. It runs in time linear in len(adm) (and
// accept) and allocates nothing, but for a MediaFile type written with a
// character reference; a malformed document gives the zero VASTFacts.
func ReadVAST(adm string, accept []string) VASTFacts {
	var sc vastScanner
	sc.s, sc.accept = adm, accept
	// The characters are checked last: markup that is not VAST (HTML, a
	// URL) is refused at its first tag without reading it all.
	if !sc.run() || sc.f.Kind == NoVAST || !validChars(sc.s) {
		return VASTFacts{}
	}
	sc.f.Protocol = vastProtocol(sc.root, sc.verDecoded(), sc.f.Kind == VASTWrapper)
	return sc.f
}

// vastScanner is one reading of a document. It lives on the caller's stack.
type vastScanner struct {
	s      string
	i      int
	accept []string
	f      VASTFacts

	root  uint8
	depth int
	// open holds the offset of each open element's name.
	open [maxVASTDepth]int32
	// attrs holds the name spans of the start tag being read.
	attrs [maxVASTAttrs][2]int32
	// verRaw is the root's version value as written (untrimmed).
	verRaw string

	inAd        bool // the open depth-2 element is an Ad
	inlineDepth int  // depth of the ad's InLine while open
	linearDepth int  // depth of the InLine's first Linear (Video) while open
	linearSeen  bool
	durDepth    int // depth of that Linear's first Duration while open
	durSeen     bool
	dur         durText
}

func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// trimXMLSpace trims XML whitespace (space, tab, CR, LF) at both ends.
func trimXMLSpace(s string) string {
	for len(s) > 0 && isXMLSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isXMLSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// validChars reports whether s is UTF-8 holding only XML 1.0 characters
// (no C0 control but tab, CR and LF; no U+FFFE, U+FFFF).
func validChars(s string) bool {
	high := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
		if c >= 0x80 {
			high = true
		}
	}
	if !high {
		return true
	}
	if !utf8.ValidString(s) {
		return false
	}
	// U+FFFE and U+FFFF are EF BF BE and EF BF BF.
	for i := strings.Index(s, "\xef\xbf"); i >= 0; {
		if i+2 < len(s) && (s[i+2] == 0xbe || s[i+2] == 0xbf) {
			return false
		}
		j := strings.Index(s[i+2:], "\xef\xbf")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return true
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= 0x80
}

func isNameChar(c byte) bool {
	return isNameStart(c) || c >= '0' && c <= '9' || c == '-' || c == '.'
}

// name reads a Name at the scanner's position and returns it ("" when
// none starts there).
func (sc *vastScanner) name() string {
	s, start := sc.s, sc.i
	if start >= len(s) || !isNameStart(s[start]) {
		return ""
	}
	i := start + 1
	for i < len(s) && isNameChar(s[i]) {
		i++
	}
	sc.i = i
	return s[start:i]
}

// localName drops a namespace prefix: the part after the name's one
// colon, when both sides are non-empty (a name with more colons, or an
// empty side, is not a prefixed name and stays whole, as encoding/xml
// reads it).
func localName(n string) string {
	i := strings.IndexByte(n, ':')
	if i <= 0 || i == len(n)-1 || strings.IndexByte(n[i+1:], ':') >= 0 {
		return n
	}
	return n[i+1:]
}

func (sc *vastScanner) skipSpace() bool {
	start := sc.i
	for sc.i < len(sc.s) && isXMLSpace(sc.s[sc.i]) {
		sc.i++
	}
	return sc.i > start
}

// run scans the whole document and reports whether it is well-formed with
// a VAST root; the facts are in sc.f.
func (sc *vastScanner) run() bool {
	s := sc.s
	if strings.HasPrefix(s, "\ufeff") {
		s = s[3:]
		sc.s = s
	}
	sc.skipSpace()
	first := true
	// Prolog: XML declaration, comments, PIs, then the root.
	for {
		sc.skipSpace()
		switch {
		case strings.HasPrefix(s[sc.i:], "<?"):
			if !sc.pi(first) {
				return false
			}
		case strings.HasPrefix(s[sc.i:], "<!--"):
			if !sc.comment() {
				return false
			}
		case strings.HasPrefix(s[sc.i:], "<"):
			sc.i++
			if !sc.startTag() {
				return false
			}
			return sc.content()
		default:
			return false // text, a DOCTYPE, another declaration, or the end
		}
		first = false
	}
}

// pi skips a processing instruction; the XML declaration (target xml in
// any case) may only come first.
func (sc *vastScanner) pi(first bool) bool {
	sc.i += 2
	target := sc.name()
	if target == "" || (strings.EqualFold(target, "xml") && !first) {
		return false
	}
	end := strings.Index(sc.s[sc.i:], "?>")
	if end < 0 {
		return false
	}
	if end > 0 && !isXMLSpace(sc.s[sc.i]) {
		return false
	}
	sc.i += end + 2
	return true
}

// comment skips a comment, which may not hold "--".
func (sc *vastScanner) comment() bool {
	sc.i += 4
	end := strings.Index(sc.s[sc.i:], "--")
	if end < 0 || sc.i+end+2 >= len(sc.s) || sc.s[sc.i+end+2] != '>' {
		return false
	}
	sc.i += end + 3
	return true
}

// content scans from after the root's start tag to the end of the
// document.
func (sc *vastScanner) content() bool {
	s := sc.s
	for sc.depth > 0 {
		lt := strings.IndexByte(s[sc.i:], '<')
		if lt < 0 {
			return false
		}
		if lt > 0 {
			if !sc.text(s[sc.i : sc.i+lt]) {
				return false
			}
			sc.i += lt
		}
		rest := s[sc.i:]
		switch {
		case strings.HasPrefix(rest, "</"):
			if !sc.endTag() {
				return false
			}
		case strings.HasPrefix(rest, "<!--"):
			if !sc.comment() {
				return false
			}
		case strings.HasPrefix(rest, "<![CDATA["):
			sc.i += 9
			end := strings.Index(s[sc.i:], "]]>")
			if end < 0 {
				return false
			}
			sc.cdata(s[sc.i : sc.i+end])
			sc.i += end + 3
		case strings.HasPrefix(rest, "<?"):
			if !sc.pi(false) {
				return false
			}
		default:
			sc.i++
			if !sc.startTag() {
				return false
			}
		}
	}
	// Misc after the root: whitespace, comments, PIs.
	for {
		sc.skipSpace()
		switch {
		case sc.i == len(s):
			return true
		case strings.HasPrefix(s[sc.i:], "<!--"):
			if !sc.comment() {
				return false
			}
		case strings.HasPrefix(s[sc.i:], "<?"):
			if !sc.pi(false) {
				return false
			}
		default:
			return false
		}
	}
}

// text checks character data (references valid, no "]]>") and feeds a
// Duration being read.
func (sc *vastScanner) text(t string) bool {
	if strings.Contains(t, "]]>") {
		return false
	}
	reading := sc.durDepth > 0 && sc.depth == sc.durDepth
	for {
		amp := strings.IndexByte(t, '&')
		if amp < 0 {
			if reading {
				sc.dur.add(t)
			}
			return true
		}
		if reading {
			sc.dur.add(t[:amp])
		}
		r, n := reference(t[amp:])
		if n == 0 {
			return false
		}
		if reading {
			sc.dur.addRune(r)
		}
		t = t[amp+n:]
	}
}

func (sc *vastScanner) cdata(t string) {
	if sc.durDepth > 0 && sc.depth == sc.durDepth {
		sc.dur.add(t)
	}
}

// startTag reads a start tag after its '<', opens the element (and closes
// it again when it is empty, "/>").
func (sc *vastScanner) startTag() bool {
	nameAt := sc.i
	n := sc.name()
	if n == "" {
		return false
	}
	if sc.depth == maxVASTDepth {
		return false
	}
	if sc.depth == 0 && sc.root != rootNone {
		return false // a second root
	}
	local := localName(n)
	depth := sc.depth + 1
	if depth == 1 {
		switch local {
		case "VAST":
			sc.root = rootVAST
		case "VideoAdServingTemplate":
			sc.root = rootVAST1
		case "DAAST":
			sc.root = rootDAAST
		default:
			return false // not VAST: no need to read further
		}
	}
	mediaFile := sc.inlineDepth > 0 && local == "MediaFile"
	nattrs := 0
	hasVersion := false
	for {
		sp := sc.skipSpace()
		if sc.i >= len(sc.s) {
			return false
		}
		c := sc.s[sc.i]
		if c == '>' || c == '/' {
			if c == '/' {
				if sc.i+1 >= len(sc.s) || sc.s[sc.i+1] != '>' {
					return false
				}
				sc.i++
			}
			sc.i++
			if depth == 1 && sc.root != rootVAST1 && (!hasVersion || trimXMLSpace(sc.verRaw) == "") {
				return false // VAST and DAAST require a version
			}
			sc.open[sc.depth] = int32(nameAt)
			sc.depth = depth
			sc.opened(local)
			if c == '/' {
				sc.closed()
			}
			return true
		}
		if !sp || nattrs == maxVASTAttrs {
			return false
		}
		at := sc.i
		an := sc.name()
		if an == "" {
			return false
		}
		for k := 0; k < nattrs; k++ {
			if sc.s[sc.attrs[k][0]:sc.attrs[k][1]] == an {
				return false // repeated attribute
			}
		}
		sc.attrs[nattrs] = [2]int32{int32(at), int32(sc.i)}
		nattrs++
		sc.skipSpace()
		if sc.i >= len(sc.s) || sc.s[sc.i] != '=' {
			return false
		}
		sc.i++
		sc.skipSpace()
		if sc.i >= len(sc.s) || (sc.s[sc.i] != '"' && sc.s[sc.i] != '\'') {
			return false
		}
		q := sc.s[sc.i]
		sc.i++
		end := strings.IndexByte(sc.s[sc.i:], q)
		if end < 0 {
			return false
		}
		v := sc.s[sc.i : sc.i+end]
		sc.i += end + 1
		if !validValue(v) {
			return false
		}
		switch al := localName(an); {
		case depth == 1 && al == "version":
			hasVersion = true
			sc.verRaw = v
		case mediaFile && al == "type":
			sc.mediaType(v)
		}
	}
}

// opened tracks an element just opened at sc.depth.
func (sc *vastScanner) opened(local string) {
	switch d := sc.depth; {
	case d == 1:
		sc.f.Version = "1.0"
		if sc.root != rootVAST1 {
			sc.f.Version = trimXMLSpace(sc.verRaw)
		}
		sc.f.DAAST = sc.root == rootDAAST
	case d == 2:
		sc.inAd = local == "Ad"
	case d == 3 && sc.inAd && sc.f.Kind == NoVAST && (local == "InLine" || local == "Wrapper"):
		if local == "InLine" {
			sc.f.Kind = VASTInLine
			sc.inlineDepth = d
		} else {
			sc.f.Kind = VASTWrapper
		}
	case sc.inlineDepth > 0 && !sc.linearSeen && (local == "Linear" && sc.root != rootVAST1 || local == "Video" && sc.root == rootVAST1):
		sc.linearSeen, sc.linearDepth = true, d
	case sc.linearDepth > 0 && d == sc.linearDepth+1 && !sc.durSeen && local == "Duration":
		sc.durSeen, sc.durDepth = true, d
	}
}

// closed closes the element at sc.depth.
func (sc *vastScanner) closed() {
	switch d := sc.depth; d {
	case sc.durDepth:
		sc.durDepth = 0
		sc.f.Duration = sc.dur.seconds()
	case sc.linearDepth:
		sc.linearDepth = 0
	case sc.inlineDepth:
		sc.inlineDepth = 0
	case 2:
		sc.inAd = false
	}
	sc.depth--
}

// endTag reads an end tag, which must close the innermost open element.
func (sc *vastScanner) endTag() bool {
	sc.i += 2
	n := sc.name()
	if n == "" {
		return false
	}
	at := int(sc.open[sc.depth-1])
	if len(sc.s)-at < len(n) || sc.s[at:at+len(n)] != n || (at+len(n) < len(sc.s) && isNameChar(sc.s[at+len(n)])) {
		return false
	}
	sc.skipSpace()
	if sc.i >= len(sc.s) || sc.s[sc.i] != '>' {
		return false
	}
	sc.i++
	sc.closed()
	return true
}

// mediaType records one MediaFile type attribute of the inline ad.
func (sc *vastScanner) mediaType(v string) {
	if strings.IndexByte(v, '&') >= 0 {
		v = decodeValue(v)
	}
	v = MediaType(v)
	if v == "" {
		return
	}
	sc.f.MediaTypes++
	if sc.f.MediaTypes == 1 {
		sc.f.FirstMediaType = v
	}
	if sc.f.MediaTypeAccepted {
		return
	}
	for _, a := range sc.accept {
		if a = MediaType(a); a != "" && equalFoldASCII(a, v) {
			sc.f.MediaTypeAccepted = true
			return
		}
	}
}

// verDecoded is the root's version with references resolved, trimmed: on
// the stack when short, as a version worth reading is.
func (sc *vastScanner) verDecoded() string {
	if sc.root == rootVAST1 {
		return "1.0"
	}
	v := sc.verRaw
	if strings.IndexByte(v, '&') < 0 {
		return trimXMLSpace(v)
	}
	var d durText // the same small buffer
	for {
		amp := strings.IndexByte(v, '&')
		if amp < 0 {
			d.add(v)
			break
		}
		d.add(v[:amp])
		r, n := reference(v[amp:])
		d.addRune(r)
		v = v[amp+n:]
	}
	if d.bad {
		return ""
	}
	return string(d.buf[:d.n])
}
