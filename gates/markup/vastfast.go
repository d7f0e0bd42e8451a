package markup

// The VAST reading's fast path. A document the strict lexer (vastlexer.go)
// reads to its end is read from the lexer's tokens, producing exactly the
// vastText calls of the encoding/xml reading (readVASTXML): the same
// names, texts and order. encoding/xml stays the reference, and reads
// everything else: malformed and tolerated markup, DOCTYPEs, and the
// well-formed documents where it may differ from the strict rules (it
// refuses a non-ASCII name outside its XML 1.0 name tables and an XML
// declaration of a version other than 1.0: names with any non-ASCII byte,
// and such declarations, go to it). TestVASTFastAgainstXML and FuzzVASTFast compare both readings.
//
// What the reading produces, as encoding/xml's non-strict Decoder.Token
// gives it: an element's own text is its character data and CDATA pieces
// joined (references resolved, CR LF and a lone CR read as LF in each
// piece, a CR written as a reference kept); the outermost element read
// (vastElements) also has its textContent, every piece inside it.

import (
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// vastWalk is the state of one fast reading: its buffers are pooled so
// that reading well-formed VAST allocates nothing once warm. The strings
// it hands to vastText point into the adm or into its buffers: valid during
// the call only, never retained.
type vastWalk struct {
	// lx is reused from reading to reading: reset sets what a reading
	// reads before writing it (and a walk's stack is spared zeroing 1.5 KB).
	lx      xmlLexer
	frames  []walkFrame
	content textAcc // textContent of the outermost element read
	outer   int     // the frame of that element, -1 when none is open
	// calls are the vastText calls, made once the whole document is known
	// to be well-formed; texts holds those that are not substrings of the
	// adm.
	calls []vastCall
	texts []byte
}

type walkFrame struct {
	name string // lower-case, when read
	read bool   // in vastElements
	own  textAcc
}

// vastCall is one vastText call: text is a substring of the adm, or
// texts[off:off+n] when n > 0; first is true for the first call made at
// an element's end (the encoding/xml reading looks at done before each
// token, so between two elements' calls, not between an element's two).
type vastCall struct {
	name   string
	text   string
	off, n int
	first  bool
}

var vastWalks = sync.Pool{New: func() any { return new(vastWalk) }}

// textAcc joins the pieces of a text: the first piece as written while
// it is alone and needs no decoding, else decoded into buf.
type textAcc struct {
	span   string
	buf    []byte
	inBuf  bool
	pieces bool
}

func (t *textAcc) reset() { t.span, t.inBuf, t.pieces = "", false, false }

// add appends a piece: character data (refs: references to resolve) or a
// CDATA section.
func (t *textAcc) add(p string, refs bool) {
	if p == "" {
		return
	}
	plain := strings.IndexByte(p, '\r') < 0 && (!refs || strings.IndexByte(p, '&') < 0)
	switch {
	case !t.pieces && plain:
		t.span, t.pieces = p, true
		return
	case !t.inBuf:
		t.buf = append(t.buf[:0], t.span...)
		t.inBuf, t.pieces = true, true
	}
	if plain {
		t.buf = append(t.buf, p...)
	} else {
		t.buf = appendXMLText(t.buf, p, refs)
	}
}

// view is the text joined; a view of buf is valid until the next add.
func (t *textAcc) view() string {
	if t.inBuf {
		return unsafe.String(unsafe.SliceData(t.buf), len(t.buf))
	}
	return t.span
}

// appendXMLText appends p as encoding/xml reads a piece: CR LF and a lone
// CR as LF, references (when refs) resolved; p's references are valid.
func appendXMLText(dst []byte, p string, refs bool) []byte {
	for p != "" {
		k := strings.IndexByte(p, '\r')
		if refs {
			if a := strings.IndexByte(p, '&'); a >= 0 && (k < 0 || a < k) {
				k = a
			}
		}
		if k < 0 {
			return append(dst, p...)
		}
		dst = append(dst, p[:k]...)
		if p[k] == '\r' {
			dst = append(dst, '\n')
			if k+1 < len(p) && p[k+1] == '\n' {
				k++
			}
			p = p[k+1:]
			continue
		}
		r, n := reference(p[k:])
		dst = utf8.AppendRune(dst, r)
		p = p[k+n:]
	}
	return dst
}

// readVASTFast reads b when the strict lexer reads it to its end and
// encoding/xml would read it the same way, and reports whether it did;
// else it does nothing.
func (a *analysis) readVASTFast(b []byte, depth int) bool {
	w := vastWalks.Get().(*vastWalk)
	s := unsafe.String(unsafe.SliceData(b), len(b))
	ok := w.walk(s)
	if ok {
		for _, c := range w.calls {
			if c.first && a.done() {
				break
			}
			text := c.text
			if c.n > 0 {
				text = unsafe.String(&w.texts[c.off], c.n)
			}
			a.vastText(c.name, text, depth)
		}
	}
	if len(b) <= maxPooledVAST {
		vastWalks.Put(w) // a large document's buffers are not kept
	}
	return ok
}

// maxPooledVAST bounds the documents whose walk goes back to the pool, and
// so the buffers the pool keeps.
const maxPooledVAST = 64 << 10

// walk reads s into w.calls; false when s is not for the fast path.
//
// The document's characters are checked first, in one pass: a document
// holding anything but XML characters is never read to its end by the
// lexer (its end checks them), and in an ASCII document every name is
// ASCII, so asciiName need not read each.
func (w *vastWalk) walk(s string) bool {
	lx := &w.lx
	lx.reset(s)
	valid, ascii := checkChars(lx.s)
	if !valid {
		return false
	}
	// In an ASCII document nothing of a start tag but its name is read:
	// the lexer checks the attributes and hands out the open element.
	lx.charsValid, lx.openTags = true, ascii
	w.frames, w.calls, w.texts, w.outer = w.frames[:0], w.calls[:0], w.texts[:0], -1
	w.content.reset()
	for {
		switch tok := lx.next(); tok {
		case tokEOF:
			return true
		case tokError:
			return false
		case tokPI:
			if !ascii && !asciiName(lx.name) || lx.name == "xml" && !xmlVersion10(lx.text) {
				return false
			}
		case tokStart, tokAttr: // not ASCII: each name is looked at
			if !asciiName(lx.name) {
				return false
			}
		case tokOpen:
			w.open(lx.local)
		case tokEnd:
			w.close()
		case tokText, tokCDATA:
			if lx.depth > 0 {
				refs := tok == tokText
				if f := &w.frames[len(w.frames)-1]; f.read {
					f.own.add(lx.text, refs)
				}
				if w.outer >= 0 {
					w.content.add(lx.text, refs)
				}
			}
		}
	}
}

func (w *vastWalk) open(local string) {
	name, read := readName(local)
	if w.outer < 0 && read {
		w.outer = len(w.frames)
	}
	if len(w.frames) < cap(w.frames) {
		w.frames = w.frames[:len(w.frames)+1]
	} else {
		w.frames = append(w.frames, walkFrame{})
	}
	f := &w.frames[len(w.frames)-1]
	f.name, f.read = name, read
	f.own.reset()
}

// close ends the innermost element, as readVASTXML's closeFrame does.
func (w *vastWalk) close() {
	f := &w.frames[len(w.frames)-1]
	w.frames = w.frames[:len(w.frames)-1]
	first := true
	own := f.own.view()
	if f.read && own != "" {
		w.call(f.name, &f.own, first)
		first = false
	}
	if w.outer == len(w.frames) {
		if w.content.view() != own {
			w.call(f.name, &w.content, first)
		}
		w.outer = -1
		w.content.reset()
	}
}

func (w *vastWalk) call(name string, t *textAcc, first bool) {
	c := vastCall{name: name, first: first}
	if t.inBuf {
		c.off, c.n = len(w.texts), len(t.buf)
		w.texts = append(w.texts, t.buf...)
	} else {
		c.text = t.span
	}
	w.calls = append(w.calls, c)
}

// asciiName reports a name encoding/xml reads as the lexer does: its name
// tables agree with the lexer's on ASCII only.
func asciiName(n string) bool {
	for i := 0; i < len(n); i++ {
		if n[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// xmlVersion10 reports whether encoding/xml accepts the XML declaration
// whose text (after the target) is d: a version it finds is 1.0. The
// search is encoding/xml's (procInst), quirks included.
func xmlVersion10(d string) bool {
	for d != "" && isXMLSpace(d[0]) {
		d = d[1:]
	}
	const param = "version="
	i := 0
	var sep byte
	for i < len(d) {
		sub := d[i:]
		k := strings.Index(sub, param)
		if k < 0 || len(param)+k >= len(sub) {
			return true
		}
		i += len(param) + k + 1
		if c := sub[len(param)+k]; c == '\'' || c == '"' {
			sep = c
			break
		}
	}
	if sep == 0 {
		return true
	}
	j := strings.IndexByte(d[i:], sep)
	return j < 0 || d[i:i+j] == "" || d[i:i+j] == "1.0"
}

// vastSpelling is an element name's lower-case form and whether it is
// read.
type vastSpelling struct {
	name string
	read bool
}

// vastSpellings maps the standard spellings and the lower-case names of
// the VAST elements to their lower-case names.
var vastSpellings = func() map[string]vastSpelling {
	m := map[string]vastSpelling{}
	for std, lower := range vastNames {
		_, read := vastElements[lower]
		m[std] = vastSpelling{lower, read}
		m[lower] = vastSpelling{lower, read}
	}
	for lower := range vastElements {
		m[lower] = vastSpelling{lower, true}
	}
	return m
}()

// spellingTable is vastSpellings as an open-addressed table, looked up
// without the map's hashing of the whole name (a map access was a sixth
// of reading a typical VAST document): slots holds, at spellingSlot(k) or
// the first slot after it not taken, the index in entries plus one of
// spelling k; 0 ends a probe.
type spellingTable struct {
	slots   [spellingSlots]uint8
	entries []spellingEntry
}

type spellingEntry struct {
	key string
	sp  vastSpelling
}

// spellingSlots is a power of two over four times the spellings (about
// 140): probes are short, the slots 512 bytes.
const (
	spellingBits  = 9
	spellingSlots = 1 << spellingBits
)

// spellingSlot hashes a name's length and three of its bytes: the first,
// the middle and the last.
func spellingSlot(k string) uint32 {
	n := uint32(len(k))
	if n == 0 {
		return 0
	}
	x := (n | uint32(k[0])<<8 | uint32(k[n/2])<<16 | uint32(k[n-1])<<24) * 0x9e3779b1
	return x >> (32 - spellingBits)
}

var spellings = func() *spellingTable {
	t := &spellingTable{}
	for k, sp := range vastSpellings {
		if len(t.entries) == 255 {
			panic("markup: too many VAST spellings for the table") // unreachable: about 140
		}
		t.entries = append(t.entries, spellingEntry{k, sp})
		i := spellingSlot(k)
		for t.slots[i] != 0 {
			i = (i + 1) & (spellingSlots - 1)
		}
		t.slots[i] = uint8(len(t.entries))
	}
	return t
}()

// lookup is vastSpellings[k].
func (t *spellingTable) lookup(k string) (vastSpelling, bool) {
	for i := spellingSlot(k); ; i = (i + 1) & (spellingSlots - 1) {
		e := t.slots[i]
		if e == 0 {
			return vastSpelling{}, false
		}
		if en := &t.entries[e-1]; en.key == k {
			return en.sp, true
		}
	}
}

// readName is vastName for an ASCII local name, and whether the element
// is read; without allocating (the lower-case name of an element not read
// is not needed).
func readName(local string) (string, bool) {
	if sp, ok := spellings.lookup(local); ok {
		return sp.name, sp.read
	}
	var buf [32]byte
	if len(local) > len(buf) {
		return "", false // longer than any name read
	}
	lower := buf[:len(local)]
	for i := 0; i < len(local); i++ {
		c := local[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	if sp, ok := spellings.lookup(string(lower)); ok && sp.read {
		return sp.name, true
	}
	return "", false
}

// sniffVAST is looksLikeVAST without encoding/xml where the answer is
// plain: ok is false when only encoding/xml can tell. It reads as
// looksLikeVASTXML does (RawToken, not strict, at most 64 tokens): a first
// start element named vast (local name, Unicode case folded) is VAST once
// its tag reads to its end; text that is not white space, another first
// element, or a token encoding/xml refuses, is not.
func sniffVAST(s string) (vast, ok bool) {
	var lx xmlLexer
	lx.s, lx.state, lx.first = s, lexProlog, true
	for tokens := 0; tokens < 64; tokens++ {
		rest := s[lx.i:]
		switch {
		case rest == "":
			return false, true
		case rest[0] != '<':
			// Character data: white space reads on, anything else
			// (or an error) is not VAST; references and non-ASCII
			// characters (U+00A0 is white space) are encoding/xml's.
			end := strings.IndexByte(rest, '<')
			if end < 0 {
				end = len(rest)
			}
			for _, c := range []byte(rest[:end]) {
				if c == '&' || c >= utf8.RuneSelf {
					return false, false
				}
			}
			if trimXMLSpace(rest[:end]) != "" {
				return false, true
			}
			lx.i += end
		case len(rest) == 1:
			return false, true
		case rest[1] == '/':
			return false, false
		case rest[1] == '!':
			if !sniffDecl(&lx, rest) {
				return false, lx.state == lexError
			}
		case rest[1] == '?':
			if lx.next() != tokPI || !asciiName(lx.name) {
				return false, false
			}
			if lx.name == "xml" && !xmlVersion10(lx.text) {
				return false, true
			}
		default:
			return sniffRoot(&lx, rest)
		}
	}
	return false, true
}

// sniffDecl reads a comment or a DOCTYPE at rest ("<!..."). false with
// the lexer in error: not VAST; false otherwise: for encoding/xml.
func sniffDecl(lx *xmlLexer, rest string) bool {
	switch {
	case strings.HasPrefix(rest, "<!--"):
		return lx.next() == tokComment // else an error to encoding/xml too
	case len(rest) == 2 || rest[2] == '-':
		lx.state = lexError // "<!" at the end, "<!-" without a second '-'
		return false
	case rest[2] == '[':
		return false // CDATA
	}
	// A directive ends at the first '>' after its first byte, unless a
	// quote or a '<' (nesting, a comment) comes before it.
	end := strings.IndexByte(rest[3:], '>')
	if end < 0 {
		lx.state = lexError // cut off
		return false
	}
	if strings.ContainsAny(rest[3:3+end], "<'\"") {
		return false
	}
	lx.i += 3 + end + 1
	lx.first = false
	return true
}

// sniffRoot reads the first start tag, at rest.
func sniffRoot(lx *xmlLexer, rest string) (vast, ok bool) {
	if c := rest[1]; !isNameStart(c) {
		return false, c < utf8.RuneSelf // an ASCII non-name byte: an error
	}
	if lx.next() != tokStart || !asciiName(lx.name) {
		return false, false
	}
	if !strings.EqualFold(lx.local, "vast") {
		return false, true
	}
	for {
		switch lx.next() {
		case tokAttr:
			if !asciiName(lx.name) {
				return false, false
			}
			if !validChars(lx.value) {
				return false, true
			}
		case tokOpen:
			return true, true
		default:
			return false, false
		}
	}
}
