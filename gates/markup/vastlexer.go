package markup

// The strict XML lexer the VAST readers share: ReadVAST (the facts), the
// VAST reading's fast path (vastfast.go) and the sniffing. It reads a
// document under the rules of vastfacts.go (one root, tags closed in
// order, quoted unique attributes, only the five predefined entities and
// character references, no DOCTYPE, XML characters only, names with at
// most one colon, the depth and attribute limits) and hands it out token by token: the caller pulls
// with next and stops when it has seen enough. Anything the rules refuse
// is tokError, at the first byte that breaks them. Linear in the input,
// allocation-free.

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// xmlToken is what xmlLexer.next read.
type xmlToken uint8

const (
	// tokError: the document breaks the rules; the lexer stays there.
	tokError xmlToken = iota
	// tokEOF: the document is well-formed and holds only XML characters.
	tokEOF
	// tokStart: a start tag's name (name, local); its attributes follow.
	tokStart
	// tokAttr: an attribute (name, local, value as written: references
	// valid, not resolved), not repeated in its tag.
	tokAttr
	// tokOpen: the start tag is complete and its element (name, local)
	// open, depth counting it; empty for "/>", its tokEnd comes next.
	tokOpen
	// tokEnd: the element at depth+1 closed (name).
	tokEnd
	// tokText: character data as written (references valid, no "]]>");
	// outside the root element only whitespace.
	tokText
	// tokCDATA: a CDATA section's content (text).
	tokCDATA
	// tokPI: a processing instruction, target name and text from after
	// the target up to "?>".
	tokPI
	// tokComment: a comment.
	tokComment
)

// Where the lexer is.
const (
	lexProlog  uint8 = iota // before the root element
	lexTag                  // in a start tag, after its name
	lexContent              // inside the root element
	lexEpilog               // after the root element
	lexEOF
	lexError
)

// xmlLexer is one reading of a document. It lives on the caller's stack
// (about 1.5 KB); the strings it hands out are substrings of s.
type xmlLexer struct {
	s     string
	i     int
	state uint8
	first bool // nothing but whitespace read yet: the XML declaration may come
	// depth is the number of open elements.
	depth int
	// endNext: the last tokOpen was "/>", its tokEnd comes next.
	endNext bool
	// charsValid: the caller has checked that s holds only XML
	// characters (validChars), which the end of the document then takes
	// as known.
	charsValid bool
	// openTags: a start tag is read to its end at once, its attributes
	// checked: tokOpen (or tokError), never tokStart or tokAttr.
	openTags bool
	empty    bool
	// name (local: without its namespace prefix), value and text of the
	// token read; tag is the name of the start tag being read or the
	// element just opened.
	name, local, value, text string
	tag, tagLocal            string
	// open holds the offset and length of each open element's name.
	open [maxVASTDepth][2]int32
	// attrs holds the name spans of the start tag being read.
	attrs  [maxVASTAttrs][2]int32
	nattrs int
	nameAt int
}

// reset starts reading s, after one optional U+FEFF.
func (lx *xmlLexer) reset(s string) {
	s = strings.TrimPrefix(s, "\ufeff")
	lx.s, lx.i, lx.state, lx.first, lx.depth, lx.endNext, lx.charsValid, lx.openTags = s, 0, lexProlog, true, 0, false, false, false
}

func (lx *xmlLexer) fail() xmlToken {
	lx.state = lexError
	return tokError
}

// next reads the next token.
func (lx *xmlLexer) next() xmlToken {
	switch lx.state {
	case lexContent:
		return lx.content()
	case lexTag:
		return lx.attr()
	case lexProlog, lexEpilog:
		return lx.misc()
	case lexEOF:
		return tokEOF
	}
	return tokError
}

// misc reads whitespace, comments and processing instructions before and
// after the root element, and the root's start tag.
func (lx *xmlLexer) misc() xmlToken {
	s := lx.s
	if start := lx.i; lx.skipSpace() {
		lx.text = s[start:lx.i]
		return tokText
	}
	rest := s[lx.i:]
	switch {
	case rest == "":
		if lx.state == lexProlog || !lx.charsValid && !validChars(s) {
			return lx.fail()
		}
		lx.state = lexEOF
		return tokEOF
	case strings.HasPrefix(rest, "<?"):
		first := lx.first
		lx.first = false
		return lx.pi(first)
	case strings.HasPrefix(rest, "<!--"):
		lx.first = false
		return lx.comment()
	case lx.state == lexProlog && rest[0] == '<':
		lx.first = false
		lx.i++
		return lx.startTag()
	}
	return lx.fail() // text, a DOCTYPE, another declaration, a second root
}

func (lx *xmlLexer) skipSpace() bool {
	s, i := lx.s, lx.i
	for i < len(s) && isXMLSpace(s[i]) {
		i++
	}
	start := lx.i
	lx.i = i
	return i > start
}

// readName reads a Name at the lexer's position and returns it ("" when
// none starts there).
func (lx *xmlLexer) readName() string {
	s, start := lx.s, lx.i
	if start >= len(s) || !isNameStart(s[start]) {
		return ""
	}
	i := start + 1
	for i < len(s) && isNameChar(s[i]) {
		i++
	}
	lx.i = i
	return s[start:i]
}

// readQName reads a Name as readName does, and its local part as
// localName gives it (ok false when the name is empty or not a name in
// XML namespaces). The name's bytes' classes are or'ed as it is read: one
// without a colon (most) is its own local part, and localName's search
// for colons is spared.
func (lx *xmlLexer) readQName() (name, local string, ok bool) {
	s, start := lx.s, lx.i
	if start >= len(s) || !isNameStart(s[start]) {
		return "", "", false
	}
	f := nameBytes[s[start]]
	i := start + 1
	for ; i < len(s); i++ {
		c := nameBytes[s[i]]
		if c == 0 {
			break
		}
		f |= c
	}
	lx.i = i
	name = s[start:i]
	if f&nameColon == 0 {
		return name, name, true
	}
	local, ok = localName(name)
	return name, local, ok
}

// pi reads a processing instruction; the XML declaration (target xml in
// any case) may only come first.
func (lx *xmlLexer) pi(first bool) xmlToken {
	lx.i += 2
	target := lx.readName()
	if target == "" || (strings.EqualFold(target, "xml") && !first) {
		return lx.fail()
	}
	end := strings.Index(lx.s[lx.i:], "?>")
	if end < 0 || end > 0 && !isXMLSpace(lx.s[lx.i]) {
		return lx.fail()
	}
	lx.name, lx.text = target, lx.s[lx.i:lx.i+end]
	lx.i += end + 2
	return tokPI
}

// comment reads a comment, which may not hold "--".
func (lx *xmlLexer) comment() xmlToken {
	lx.i += 4
	end := strings.Index(lx.s[lx.i:], "--")
	if end < 0 || lx.i+end+2 >= len(lx.s) || lx.s[lx.i+end+2] != '>' {
		return lx.fail()
	}
	lx.i += end + 3
	return tokComment
}

// content reads inside the root element.
func (lx *xmlLexer) content() xmlToken {
	if lx.endNext {
		lx.endNext = false
		lx.name, lx.local = lx.tag, lx.tagLocal
		return lx.closed()
	}
	s, i := lx.s, lx.i
	if i >= len(s) {
		return lx.fail() // cut off
	}
	if s[i] != '<' {
		lt := strings.IndexByte(s[i:], '<')
		if lt < 0 {
			return lx.fail() // cut off
		}
		t := s[i : i+lt]
		if !validText(t) {
			return lx.fail()
		}
		lx.text = t
		lx.i += lt
		return tokText
	}
	// What follows the '<' tells: an end tag, a comment, CDATA, a
	// processing instruction, else a start tag.
	if i+1 < len(s) {
		switch rest := s[i:]; rest[1] {
		case '/':
			return lx.endTag()
		case '!':
			switch {
			case strings.HasPrefix(rest, "<!--"):
				return lx.comment()
			case strings.HasPrefix(rest, "<![CDATA["):
				lx.i += 9
				end := strings.Index(s[lx.i:], "]]>")
				if end < 0 {
					return lx.fail()
				}
				lx.text = s[lx.i : lx.i+end]
				lx.i += end + 3
				return tokCDATA
			}
		case '?':
			return lx.pi(false)
		}
	}
	lx.i++
	return lx.startTag()
}

// validText checks character data: no "]]>", references valid.
func validText(t string) bool {
	if len(t) <= shortText && plainShort(t, ']') {
		return true
	}
	if strings.Contains(t, "]]>") {
		return false
	}
	for {
		amp := strings.IndexByte(t, '&')
		if amp < 0 {
			return true
		}
		_, n := reference(t[amp:])
		if n == 0 {
			return false
		}
		t = t[amp+n:]
	}
}

// shortText is the length up to which plainShort reads a text itself
// rather than through IndexByte calls, whose fixed cost is more.
const shortText = 16

// plainShort reports a text holding neither '&' nor c: valid as it is.
// One of 8 to 16 bytes is read as two words that overlap, one under 8 (or,
// from other callers, over 16) byte by byte.
func plainShort(t string, c byte) bool {
	if n := len(t); n >= 8 && n <= 16 {
		x := binary.LittleEndian.Uint64([]byte(t[:8]))
		y := binary.LittleEndian.Uint64([]byte(t[n-8:]))
		return equalBytes(x, '&')|equalBytes(x, c)|equalBytes(y, '&')|equalBytes(y, c) == 0
	}
	for i := 0; i < len(t); i++ {
		if t[i] == '&' || t[i] == c {
			return false
		}
	}
	return true
}

// equalBytes returns the high bit of each byte of x equal to c, exact per
// byte: the low seven bits of a byte of x^c are added to 0x7f without a
// carry out of the byte.
func equalBytes(x uint64, c byte) uint64 {
	const ones, low7 = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f
	y := x ^ ones*uint64(c)
	return ^((y&low7 + low7) | y) & (ones * 0x80)
}

// startTag reads a start tag's name, after its '<'.
func (lx *xmlLexer) startTag() xmlToken {
	lx.nameAt = lx.i
	n, local, ok := lx.readQName()
	if !ok || lx.depth == maxVASTDepth {
		return lx.fail()
	}
	lx.name, lx.local, lx.tag, lx.tagLocal = n, local, n, local
	lx.nattrs, lx.state = 0, lexTag
	if lx.openTags {
		return lx.attrsToOpen()
	}
	return tokStart
}

// attr reads the next attribute of a start tag, or its end.
func (lx *xmlLexer) attr() xmlToken {
	s := lx.s
	sp := lx.skipSpace()
	if lx.i >= len(s) {
		return lx.fail()
	}
	if c := s[lx.i]; c == '>' || c == '/' {
		if c == '/' {
			if lx.i+1 >= len(s) || s[lx.i+1] != '>' {
				return lx.fail()
			}
			lx.i++
		}
		lx.i++
		lx.open[lx.depth] = [2]int32{int32(lx.nameAt), int32(len(lx.tag))}
		lx.depth++
		lx.empty, lx.endNext = c == '/', c == '/'
		lx.name, lx.local, lx.state = lx.tag, lx.tagLocal, lexContent
		return tokOpen
	}
	if !sp || lx.nattrs == maxVASTAttrs {
		return lx.fail()
	}
	at := lx.i
	an, al, ok := lx.readQName()
	if !ok {
		return lx.fail()
	}
	for k := 0; k < lx.nattrs; k++ {
		if s[lx.attrs[k][0]:lx.attrs[k][1]] == an {
			return lx.fail() // repeated attribute
		}
	}
	lx.attrs[lx.nattrs] = [2]int32{int32(at), int32(lx.i)}
	lx.nattrs++
	lx.skipSpace()
	if lx.i >= len(s) || s[lx.i] != '=' {
		return lx.fail()
	}
	lx.i++
	lx.skipSpace()
	if lx.i >= len(s) || (s[lx.i] != '"' && s[lx.i] != '\'') {
		return lx.fail()
	}
	q := s[lx.i]
	lx.i++
	end := strings.IndexByte(s[lx.i:], q)
	if end < 0 {
		return lx.fail()
	}
	v := s[lx.i : lx.i+end]
	lx.i += end + 1
	if !validValue(v) {
		return lx.fail()
	}
	lx.name, lx.local, lx.value = an, al, v
	return tokAttr
}

// attrsToOpen reads the rest of a start tag, its attributes as attr
// reads them one by one: tokOpen at its end, or tokError.
func (lx *xmlLexer) attrsToOpen() xmlToken {
	for {
		if tok := lx.attr(); tok != tokAttr {
			return tok
		}
	}
}

// endTag reads an end tag, which must close the innermost open element:
// its name is that element's, the same bytes with no name byte after them
// (the Name read there would be longer).
func (lx *xmlLexer) endTag() xmlToken {
	lx.i += 2
	s, i := lx.s, lx.i
	o := lx.open[lx.depth-1]
	at, n := int(o[0]), int(o[1])
	if len(s)-i < n || s[i:i+n] != s[at:at+n] || i+n < len(s) && isNameChar(s[i+n]) {
		return lx.fail()
	}
	lx.i = i + n
	lx.skipSpace()
	if lx.i >= len(s) || s[lx.i] != '>' {
		return lx.fail()
	}
	lx.i++
	lx.name = s[i : i+n]
	return lx.closed()
}

// closed closes the innermost open element.
func (lx *xmlLexer) closed() xmlToken {
	lx.depth--
	if lx.depth == 0 {
		lx.state = lexEpilog
	}
	return tokEnd
}

func isXMLSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

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
	valid, _ := checkChars(s)
	return valid
}

// checkChars is validChars, and whether s is ASCII.
func checkChars(s string) (valid, ascii bool) {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	var high uint64 // bit 7 of a byte set: not ASCII
	i := 0
	// Sixteen bytes a step, then eight: one test of the two words.
	for ; i+16 <= len(s); i += 16 {
		b := s[i : i+16]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		v := uint64(b[8]) | uint64(b[9])<<8 | uint64(b[10])<<16 | uint64(b[11])<<24 |
			uint64(b[12])<<32 | uint64(b[13])<<40 | uint64(b[14])<<48 | uint64(b[15])<<56
		high |= w | v
		if ((w-0x20*lo)&^w|(v-0x20*lo)&^v)&hi != 0 && !validControls(b) {
			return false, false
		}
	}
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		high |= w
		// Some byte is under 0x20 (tab, CR and LF are): look at each.
		if (w-0x20*lo)&^w&hi != 0 && !validControls(b) {
			return false, false
		}
	}
	if !validControls(s[i:]) {
		return false, false
	}
	for ; i < len(s); i++ {
		high |= uint64(s[i])
	}
	if high&hi == 0 {
		return true, true
	}
	if !utf8.ValidString(s) {
		return false, false
	}
	// U+FFFE and U+FFFF are EF BF BE and EF BF BF.
	for i := strings.Index(s, "\xef\xbf"); i >= 0; {
		if i+2 < len(s) && (s[i+2] == 0xbe || s[i+2] == 0xbf) {
			return false, false
		}
		j := strings.Index(s[i+2:], "\xef\xbf")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return true, false
}

// validControls reports whether s holds no C0 control but tab, CR and LF.
func validControls(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func isNameStart(c byte) bool { return nameBytes[c]&nameStart != 0 }

func isNameChar(c byte) bool { return nameBytes[c] != 0 }

// nameBytes classifies the bytes of a Name: any byte of a multi-byte
// character, the ASCII letters, '_' and ':' start one; digits, '-' and '.'
// continue one. ':' has a bit of its own (nameColon).
var nameBytes = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c == ':':
			t[c] = nameStart | nameChar | nameColon
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80:
			t[c] = nameStart | nameChar
		case c >= '0' && c <= '9' || c == '-' || c == '.':
			t[c] = nameChar
		}
	}
	return t
}()

const (
	nameStart = 1 << iota
	nameChar
	nameColon // ':', which readQName looks for
)

// localName drops a namespace prefix: the part after the name's colon,
// when both sides are non-empty (a name with an empty side stays whole).
// ok is false for an empty name and for one with two colons or more,
// which is no name in XML namespaces: encoding/xml refuses it too.
func localName(n string) (local string, ok bool) {
	i := strings.IndexByte(n, ':')
	switch {
	case n == "":
		return "", false
	case i < 0:
		return n, true
	case strings.IndexByte(n[i+1:], ':') >= 0:
		return "", false
	case i == 0 || i == len(n)-1:
		return n, true
	}
	return n[i+1:], true
}
