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
// local name (a namespace prefix is dropped), case-sensitively; a name
// with two colons makes the document malformed (no XML namespaces name
// has them, and encoding/xml refuses them). A DOCTYPE makes the document
// malformed: no DTD is read and no entity is expanded (XXE, "billion
// laughs"). Anything else is no VAST (Kind NoVAST): HTML, JSON, a URL, an
// empty adm, VAST wrapped in CDATA or XML-escaped, and malformed VAST.
//
// Two limits keep the scanner linear without allocating: elements nest at
// most maxVASTDepth deep and a start tag carries at most maxVASTAttrs
// attributes (real VAST nests about 8 deep and carries under 10). A
// document past either is read as no VAST, as a malformed one is.
//
// The scanner is the strict lexer of vastlexer.go, which the VAST reading
// of the markup gates shares (vastfast.go). Why a hand-written one: the
// rules above are a well-formedness check (tags closed in order, unique
// attributes, references limited to the predefined five, no DOCTYPE),
// which encoding/xml makes only while
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

import "strings"

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
	var fr factsReader
	fr.lx.reset(adm)
	fr.accept = accept
	// The characters are checked last (at tokEOF): markup that is not
	// VAST (HTML, a URL) is refused at its first tag without reading it
	// all.
	if !fr.run() || fr.f.Kind == NoVAST {
		return VASTFacts{}
	}
	fr.f.Protocol = vastProtocol(fr.root, fr.verDecoded(), fr.f.Kind == VASTWrapper)
	return fr.f
}

// factsReader reads the facts from the lexer's tokens. It lives on the
// caller's stack.
type factsReader struct {
	lx     xmlLexer
	accept []string
	f      VASTFacts

	root uint8
	// verRaw is the root's version value as written (untrimmed).
	verRaw     string
	hasVersion bool

	inAd        bool // the open depth-2 element is an Ad
	inlineDepth int  // depth of the ad's InLine while open
	linearDepth int  // depth of the InLine's first Linear (Video) while open
	linearSeen  bool
	durDepth    int // depth of that Linear's first Duration while open
	durSeen     bool
	dur         durText
	mediaFile   bool // the start tag read is a MediaFile of the inline ad
}

// run reads the whole document and reports whether it is well-formed with
// a VAST root; the facts are in fr.f.
func (fr *factsReader) run() bool {
	lx := &fr.lx
	for {
		switch lx.next() {
		case tokEOF:
			return true
		case tokError:
			return false
		case tokStart:
			local := lx.local
			if lx.depth == 0 {
				switch local {
				case "VAST":
					fr.root = rootVAST
				case "VideoAdServingTemplate":
					fr.root = rootVAST1
				case "DAAST":
					fr.root = rootDAAST
				default:
					return false // not VAST: no need to read further
				}
			}
			fr.mediaFile = fr.inlineDepth > 0 && local == "MediaFile"
		case tokAttr:
			switch al := lx.local; {
			case lx.depth == 0 && al == "version":
				fr.hasVersion = true
				fr.verRaw = lx.value
			case fr.mediaFile && al == "type":
				fr.mediaType(lx.value)
			}
		case tokOpen:
			if lx.depth == 1 && fr.root != rootVAST1 && (!fr.hasVersion || trimXMLSpace(fr.verRaw) == "") {
				return false // VAST and DAAST require a version
			}
			fr.opened(lx.local)
		case tokEnd:
			fr.closed(lx.depth + 1)
		case tokText:
			if fr.durDepth > 0 && lx.depth == fr.durDepth {
				fr.durText(lx.text)
			}
		case tokCDATA:
			if fr.durDepth > 0 && lx.depth == fr.durDepth {
				fr.dur.add(lx.text)
			}
		}
	}
}

// durText feeds character data (references valid) to the Duration read.
func (fr *factsReader) durText(t string) {
	for {
		amp := strings.IndexByte(t, '&')
		if amp < 0 {
			fr.dur.add(t)
			return
		}
		fr.dur.add(t[:amp])
		r, n := reference(t[amp:])
		fr.dur.addRune(r)
		t = t[amp+n:]
	}
}

// opened tracks an element just opened at fr.lx.depth.
func (fr *factsReader) opened(local string) {
	switch d := fr.lx.depth; {
	case d == 1:
		fr.f.Version = "1.0"
		if fr.root != rootVAST1 {
			fr.f.Version = trimXMLSpace(fr.verRaw)
		}
		fr.f.DAAST = fr.root == rootDAAST
	case d == 2:
		fr.inAd = local == "Ad"
	case d == 3 && fr.inAd && fr.f.Kind == NoVAST && (local == "InLine" || local == "Wrapper"):
		if local == "InLine" {
			fr.f.Kind = VASTInLine
			fr.inlineDepth = d
		} else {
			fr.f.Kind = VASTWrapper
		}
	case fr.inlineDepth > 0 && !fr.linearSeen && (local == "Linear" && fr.root != rootVAST1 || local == "Video" && fr.root == rootVAST1):
		fr.linearSeen, fr.linearDepth = true, d
	case fr.linearDepth > 0 && d == fr.linearDepth+1 && !fr.durSeen && local == "Duration":
		fr.durSeen, fr.durDepth = true, d
	}
}

// closed tracks the element at depth d closing.
func (fr *factsReader) closed(d int) {
	switch d {
	case fr.durDepth:
		fr.durDepth = 0
		fr.f.Duration = fr.dur.seconds()
	case fr.linearDepth:
		fr.linearDepth = 0
	case fr.inlineDepth:
		fr.inlineDepth = 0
	case 2:
		fr.inAd = false
	}
}

// mediaType records one MediaFile type attribute of the inline ad.
func (fr *factsReader) mediaType(v string) {
	if strings.IndexByte(v, '&') >= 0 {
		v = decodeValue(v)
	}
	v = MediaType(v)
	if v == "" {
		return
	}
	fr.f.MediaTypes++
	if fr.f.MediaTypes == 1 {
		fr.f.FirstMediaType = v
	}
	if fr.f.MediaTypeAccepted {
		return
	}
	for _, a := range fr.accept {
		if a = MediaType(a); a != "" && equalFoldASCII(a, v) {
			fr.f.MediaTypeAccepted = true
			return
		}
	}
}

// verDecoded is the root's version with references resolved, trimmed: on
// the stack when short, as a version worth reading is.
func (fr *factsReader) verDecoded() string {
	if fr.root == rootVAST1 {
		return "1.0"
	}
	v := fr.verRaw
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
