package gates

// The lexing half of markupjs.go: names, keywords, numbers, comments,
// regular expressions, strings and template literals with their escapes,
// member names in brackets, and the decoder matcher for text that will run
// as code. Everything reads through the scanner's escDecoder, in place.

import "bytes"

// jsNameMax is the longest name compared; longer names match nothing.
const jsNameMax = 24

// jsName is a short ASCII name; n is -1 once it cannot match any name.
type jsName struct {
	b [jsNameMax]byte
	n int8
}

func (m *jsName) add(c byte) {
	if m.n < 0 {
		return
	}
	if int(m.n) == jsNameMax || c >= 0x80 {
		m.n = -1
		return
	}
	m.b[m.n] = c
	m.n++
}

func (m *jsName) is(w string) bool { return int(m.n) == len(w) && string(m.b[:m.n]) == w }

// isNavRoot reports the objects whose location is the page's: an assignment
// to <root>.location navigates the window or its parent.
func (m *jsName) isNavRoot() bool {
	switch m.n {
	case 3:
		return m.is("top")
	case 4:
		return m.is("self")
	case 6:
		return m.is("window") || m.is("parent") || m.is("frames")
	case 8:
		return m.is("document")
	case 10:
		return m.is("globalThis")
	}
	return false
}

// isDecoder reports the decoders of decode-and-run: atob, unescape,
// decodeURIComponent, and fromCharCode when it follows String.
func (m *jsName) isDecoder(afterString bool) bool {
	return m.is("atob") || m.is("unescape") || m.is("decodeURIComponent") || afterString && m.is("fromCharCode")
}

// value ends a literal: it ends an expression and no member chain.
func (j *jsScanner) value() {
	j.resetChain()
	j.declNext, j.prev = false, prevExpr
}

func (j *jsScanner) ident() {
	var m jsName
	s := j.d.s
	p := j.p
	if j.d.flags == 0 { // script as written: names without escapes read in place
		e := p
		for e < len(s) && isJSIdentPart(s[e]) {
			if s[e] >= 0x80 {
				if n, _ := utf8JSSpace(s, e); n > 0 {
					break
				}
			}
			e++
		}
		if e > p && (e == len(s) || s[e] != '\\') {
			if e-p > jsNameMax {
				m.n = -1
			} else {
				for _, c := range s[p:e] {
					m.add(c)
				}
			}
			p = e
		}
	}
	for p < len(s) {
		c, n := j.d.at(p)
		if c == '\\' {
			r, n2, ok := j.unicodeEscape(n)
			if !ok {
				break
			}
			m.add(asciiOr80(r))
			p = n2
			continue
		}
		if !isJSIdentPart(c) {
			break
		}
		if c >= 0x80 {
			if l, _ := j.uspace(c, p, n); l > 0 {
				break
			}
		}
		m.add(c)
		p = n
	}
	if p == j.p { // a backslash that escapes nothing
		_, j.p = j.d.at(p)
		j.punct('\\')
		return
	}
	j.p = p
	switch kw := jsKeyword(&m); kw {
	case kwNone:
		j.token(false)
		j.name(&m, j.afterDot)
	case kwDecl:
		j.token(false)
		j.resetChain()
		j.declNext, j.prev = true, prevOp
	case kwOperator:
		j.token(false)
		j.resetChain()
		j.declNext, j.prev = false, prevOp
	case kwFunction:
		j.token(true)
		j.resetChain()
		j.declNext, j.prev = false, prevStmt
	default: // kwControl, kwStatement
		j.token(false)
		j.resetChain()
		j.declNext, j.prev, j.ctrlNext = false, prevStmt, kw == kwControl
	}
}

// Keyword classes.
const (
	kwNone      = iota // a name (this, null and true read as names: they end an expression)
	kwDecl             // var, let, const
	kwOperator         // a regex or an object literal may follow: return, typeof, new ...
	kwFunction         // function, async
	kwControl          // if, while, for, with: their ')' is followed by a statement
	kwStatement        // else, do, try ...: a block or a regex may follow
)

func jsKeyword(m *jsName) int {
	if m.n < 2 || m.n > 10 || m.b[0] < 'a' || m.b[0] > 'z' {
		return kwNone
	}
	switch string(m.b[:m.n]) {
	case "var", "let", "const":
		return kwDecl
	case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "yield", "await":
		return kwOperator
	case "function", "async":
		return kwFunction
	case "if", "while", "for", "with":
		return kwControl
	case "else", "do", "try", "finally", "class", "extends", "switch", "catch":
		return kwStatement
	}
	return kwNone
}

// unicodeEscape reads \uXXXX or \u{X...} after the backslash at p-1.
func (j *jsScanner) unicodeEscape(p int) (r rune, next int, ok bool) {
	s := j.d.s
	if p >= len(s) {
		return 0, p, false
	}
	c, p := j.d.at(p)
	if c != 'u' {
		return 0, p, false
	}
	braces := false
	if p < len(s) {
		if c, n := j.d.at(p); c == '{' {
			braces, p = true, n
		}
	}
	for k := 0; p < len(s); k++ {
		c, n := j.d.at(p)
		if braces && c == '}' && k > 0 {
			return r, n, true
		}
		v, hex := markupUnhex(c)
		if !hex || (!braces && k == 4) || k == 8 {
			break
		}
		r, p = r<<4|rune(v), n
		if !braces && k == 3 {
			return r, p, true
		}
	}
	return 0, p, false
}

func (j *jsScanner) number(p int) {
	j.token(false)
	s := j.d.s
	for p < len(s) {
		c, n := j.d.at(p)
		if !isJSIdentPart(c) && c != '.' {
			break
		}
		p = n
	}
	j.p = p
	j.value()
}

// slash reads a comment, a regular expression, or division.
func (j *jsScanner) slash(n int) {
	s := j.d.s
	var c2 byte
	n2 := n
	if n < len(s) {
		c2, n2 = j.d.at(n)
	}
	switch {
	case c2 == '/':
		j.p = j.skipLine(n2)
	case c2 == '*':
		j.p = j.skipBlock(n2)
	case j.prev != prevExpr:
		j.token(false)
		j.p = j.skipRegex(n)
		j.value()
	case c2 == '=':
		j.token(false)
		j.p = n2
		j.assign()
	default:
		j.p = n
		j.punct('/')
	}
}

// skipLine skips a line comment: up to a line terminator (U+2028 and
// U+2029 are ones too) and past it.
func (j *jsScanner) skipLine(p int) int {
	s := j.d.s
	if j.d.flags == 0 {
		if i := bytes.IndexAny(s[p:], "\n\r\u2028\u2029"); i >= 0 {
			if s[p+i] >= 0x80 {
				return p + i + 3
			}
			return p + i + 1
		}
		return len(s)
	}
	for p < len(s) {
		c, n := j.d.at(p)
		if c == '\n' || c == '\r' {
			return n
		}
		if c >= 0x80 {
			if l, line := j.uspace(c, p, n); line {
				return p + l
			}
		}
		p = n
	}
	return p
}

// uspace reports white space or a line terminator outside ASCII at p, whose
// unit c >= 0x80 the decoder read up to n: written in UTF-8 (a raw byte),
// or a reference to one the decoder undid. It returns its length from p (0
// when there is none) and whether it ends a line.
func (j *jsScanner) uspace(c byte, p, n int) (int, bool) {
	if n > p+1 { // decoded from an escape
		if c == usSpace || c == usLine {
			return n - p, c == usLine
		}
		return 0, false
	}
	return utf8JSSpace(j.d.s, p)
}

func (j *jsScanner) skipBlock(p int) int {
	s := j.d.s
	if j.d.flags == 0 {
		if i := bytes.Index(s[p:], []byte("*/")); i >= 0 {
			return p + i + 2
		}
		return len(s)
	}
	var prev byte
	for p < len(s) {
		c, n := j.d.at(p)
		if prev == '*' && c == '/' {
			return n
		}
		prev, p = c, n
	}
	return p
}

// skipRegex skips a regular expression literal whose body starts at p (a
// line end also ends it: the script would not compile) and its flags.
func (j *jsScanner) skipRegex(p int) int {
	s := j.d.s
	class := false
	for p < len(s) {
		c, n := j.d.at(p)
		switch {
		case c == '\\':
			if n < len(s) {
				_, n = j.d.at(n)
			}
		case c == '\n' || c == '\r':
			return n
		case c == '[':
			class = true
		case c == ']':
			class = false
		case c == '/' && !class:
			p = n
			for p < len(s) {
				c, n := j.d.at(p)
				if !isJSIdentPart(c) {
					break
				}
				p = n
			}
			return p
		}
		p = n
	}
	return p
}

// readString reads the string whose quote q precedes p and returns the index
// after it. Its content, escapes undone, goes to name (when not nil) and, in
// an open call, to the decoder matcher.
func (j *jsScanner) readString(p int, q byte, name *jsName) int {
	s := j.d.s
	feed := j.openCalls()
	if !feed && name == nil && j.d.flags == 0 {
		return rawStringEnd(s, p, q)
	}
	j.text = jsTextMatch{}
	for p < len(s) {
		c, n := j.d.at(p)
		switch c {
		case q:
			return n
		case '\n', '\r':
			return n
		case '\\':
			c, n = j.stringEscape(n)
			if c == 0 {
				p = n
				continue
			}
		}
		c, n = j.textUnit(c, p, n)
		if name != nil {
			name.add(c)
		}
		if feed {
			if j.text.feed(c) {
				j.decoded()
			}
			j.gather(c)
		}
		p = n
	}
	return p
}

// textUnit is the unit c, read from p to n in a string or a template, as
// the code it may become reads it: white space or a line terminator outside
// ASCII (written, or escaped) as a space, any other code point outside
// ASCII as 0x80.
func (j *jsScanner) textUnit(c byte, p, n int) (byte, int) {
	if c < 0x80 {
		return c, n
	}
	if l, _ := j.uspace(c, p, n); l > 0 {
		return ' ', p + l
	}
	return 0x80, n
}

// rawStringEnd returns the index after the string whose quote q precedes p,
// in script read as written.
func rawStringEnd(s []byte, p int, q byte) int {
	for p < len(s) {
		switch c := s[p]; c {
		case q, '\n', '\r':
			return p + 1
		case '\\':
			p++
			if p+1 < len(s) && s[p] == '\r' && s[p+1] == '\n' {
				p++
			}
		}
		p++
	}
	return len(s)
}

// stringEscape decodes the escape whose backslash precedes p: it returns the
// character (0 for a line continuation) and the index after the escape.
func (j *jsScanner) stringEscape(p int) (byte, int) {
	s := j.d.s
	if p >= len(s) {
		return 0, p
	}
	c, n := j.d.at(p)
	switch c {
	case 'x':
		// Two hex digits, each a unit of the layers below (which may be
		// longer than a byte: check the bound before each).
		if n < len(s) {
			h, n1 := j.d.at(n)
			if n1 < len(s) {
				l, n2 := j.d.at(n1)
				hi, ok1 := markupUnhex(h)
				lo, ok2 := markupUnhex(l)
				if ok1 && ok2 {
					return asciiOr80(rune(hi<<4 | lo)), n2
				}
			}
		}
		return 'x', n
	case 'u':
		if r, n2, ok := j.unicodeEscape(p); ok {
			return asciiOr80(r), n2
		}
		return 'u', n
	case '\r':
		if n < len(s) {
			if c2, n2 := j.d.at(n); c2 == '\n' {
				return 0, n2
			}
		}
		return 0, n
	case '\n':
		return 0, n
	case 'n':
		return '\n', n
	case 't':
		return '\t', n
	case 'r':
		return '\r', n
	case 'b', 'f', 'v':
		return ' ', n
	}
	if c >= '0' && c <= '7' { // legacy octal, up to 3 digits and 255
		v := int(c - '0')
		for k := 0; k < 2 && n < len(s); k++ {
			c2, n2 := j.d.at(n)
			if c2 < '0' || c2 > '7' || v*8+int(c2-'0') > 255 {
				break
			}
			v, n = v*8+int(c2-'0'), n2
		}
		return asciiOr80(rune(v)), n
	}
	return c, n
}

// template reads a template literal from j.p (after '`' or after the '}'
// closing a substitution) to its end or its next "${".
func (j *jsScanner) template() {
	s := j.d.s
	feed := j.openCalls()
	j.text = jsTextMatch{}
	p := j.p
	for p < len(s) {
		c, n := j.d.at(p)
		switch c {
		case '`':
			j.p = n
			j.value()
			return
		case '\\':
			c, n = j.stringEscape(n)
		case '$':
			if n < len(s) {
				if c2, n2 := j.d.at(n); c2 == '{' {
					j.p = n2
					j.push(frameTemplate, callNone)
					j.resetChain()
					j.prev = prevOp
					return
				}
			}
		}
		if c != 0 {
			c, n = j.textUnit(c, p, n)
		}
		if feed && c != 0 {
			if j.text.feed(c) {
				j.decoded()
			}
			j.gather(c)
		}
		p = n
	}
	j.p = p
}

// bracketName reads a member name in brackets after '[' (at j.p): strings
// joined by '+'. It returns false, leaving j.p, for anything else.
func (j *jsScanner) bracketName() (m jsName, ok bool) {
	s := j.d.s
	p, want := j.p, true
	for p < len(s) {
		c, n := j.d.at(p)
		if c >= 0x80 {
			if l, _ := j.uspace(c, p, n); l > 0 {
				p += l
				continue
			}
		}
		switch {
		case isJSSpace(c):
			p = n
		case c == '/' && n < len(s):
			c2, n2 := j.d.at(n)
			switch c2 {
			case '/':
				p = j.skipLine(n2)
			case '*':
				p = j.skipBlock(n2)
			default:
				return m, false
			}
		case want && (c == '"' || c == '\''):
			p, want = j.readString(n, c, &m), false
		case want && c == '`':
			e, ok := j.plainTemplate(n, &m)
			if !ok {
				return m, false
			}
			p, want = e, false
		case !want && c == '+':
			p, want = n, true
		case !want && c == ']':
			j.p = n
			return m, true
		default:
			return m, false
		}
	}
	return m, false
}

// plainTemplate reads a template literal without substitutions, whose body
// starts at p, into name: the index after it, false when it has a
// substitution or never ends.
func (j *jsScanner) plainTemplate(p int, name *jsName) (int, bool) {
	s := j.d.s
	for p < len(s) {
		c, n := j.d.at(p)
		switch c {
		case '`':
			return n, true
		case '$':
			if n < len(s) {
				if c2, _ := j.d.at(n); c2 == '{' {
					return p, false
				}
			}
		case '\\':
			if c, n = j.stringEscape(n); c == 0 {
				p = n
				continue
			}
		}
		name.add(c)
		p = n
	}
	return p, false
}

// jsTextMatch finds a decoder call in text that will run as code (a string
// passed to eval, a timer or document.write): a decoder name, optional
// spaces, '('. Fed one decoded byte at a time.
type jsTextMatch struct {
	cur, last       jsName
	inName, hasLast bool
	curStr, lastStr bool // the name follows "String."
	strDot          bool // "String." was just read
}

func (m *jsTextMatch) feed(c byte) bool {
	if isJSIdentPart(c) {
		if !m.inName {
			m.cur, m.inName, m.curStr, m.strDot = jsName{}, true, m.strDot, false
		}
		m.cur.add(c)
		m.hasLast = false
		return false
	}
	if m.inName {
		m.last, m.lastStr, m.hasLast, m.inName = m.cur, m.curStr, true, false
	}
	switch {
	case isJSSpace(c):
		return false
	case c == '(':
		hit := m.hasLast && m.last.isDecoder(m.lastStr)
		m.hasLast, m.strDot = false, false
		return hit
	case c == '.':
		m.strDot = m.hasLast && m.last.is("String")
		m.hasLast = false
		return false
	}
	m.hasLast, m.strDot = false, false
	return false
}

func isJSSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isJSIdentPart reports a byte of a name: ASCII letters, digits, '_', '$',
// and anything outside ASCII.
func isJSIdentPart(c byte) bool {
	return isMarkupLetter(c) || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}
