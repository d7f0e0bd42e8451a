package gates

// JavaScript in markup, for markupSafety: a lexer over script read through an
// escDecoder (a <script> body as written, an event-handler attribute through
// character references) that finds forced redirects and decode-and-run calls.
// It reads tokens, not text, so whitespace and comments between tokens are
// ignored, `==` is a comparison and not an assignment, and names in strings,
// comments and regular expressions are not code; a string in brackets names a
// member (`top["loc"+"ation"]`, `window['eval']`), and JavaScript escapes in
// identifiers and strings are undone (`\u0065val`, `'\x6cocation'`).
//
// Without a parser, a '/' is read as the start of a regular expression unless
// the token before it ends an expression (a name, a literal, ')' of a call,
// ']', '}' of an object literal), the usual lexer heuristic. Nesting is
// tracked at any depth (past 64 levels in a pooled buffer). Time is linear in
// the input (a bracketed member name may be read twice), and nothing is
// allocated once the pool is warm.

import (
	"bytes"
	"sync"
)

// What scanJS finds.
const (
	jsRedirect  uint8 = 1 << iota // an assignment to a top-level location, location.replace( ...
	jsDecodeRun                   // eval, Function, a string timer or document.write fed by a decoder
)

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

// What a call may run.
const (
	callNone  uint8 = iota
	callEval        // eval, Function, document.write: any decoder in its arguments counts
	callTimer       // setTimeout, setInterval: a decoder in a first argument that is not a function
)

// An open bracket is one byte: its kind, and flags.
const (
	frameParen    byte = iota + 1 // (
	frameBracket                  // [
	frameBlock                    // { of a block
	frameObject                   // { of an object literal
	frameTemplate                 // ${ of a template literal
	frameKind     byte = 7
	frameCtrl     byte = 8  // ( after if, while, for, with: a '/' after its ')' starts a regex
	frameCall     byte = 16 // ( of a call that may run code (an entry of calls)
)

// jsCall is an open call that may run code.
type jsCall struct {
	depth int // its bracket's index in the nesting
	call  uint8
	arg0  bool // callTimer: still in the first argument
	first bool // callTimer: no token of the first argument read yet
	fn    bool // callTimer: the first argument is a function
	dec   bool // callTimer: a decoder call in the first argument
}

// jsInlineDepth is the nesting kept in the scanner itself; deeper nesting
// goes to a pooled buffer, so no depth escapes tracking.
const jsInlineDepth = 64

// jsMaxCalls is how many open calls that may run code are tracked one by
// one; beyond it, a decoder inside any of them counts (fail closed).
const jsMaxCalls = 32

var jsDeepStacks = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// What the previous token was, for '/' and '{'.
const (
	prevStmt byte = iota // start, ';', a block's braces, ctrl ')', '=>', else, do ...
	prevOp               // an operator, '(', '[', ',', '=', return, typeof ...
	prevExpr             // a name, a literal, ')', ']', an object's '}'
)

// jsScanner is the lexer's state. It is large: one lives on the stack per
// scanJS call.
type jsScanner struct {
	d     escDecoder
	p     int
	found uint8

	prev     byte
	declNext bool // the previous token was var, let or const
	ctrlNext bool // the previous token was if, while, for or with

	// The member chain being read: its last three names, oldest first.
	chain     [3]jsName
	nChain    int
	chainLen  int  // names in the whole chain (saturating)
	chainBare bool // it began with a name not after '.'
	chainDecl bool // it began right after var, let or const
	afterDot  bool

	inline [jsInlineDepth]byte // open brackets, innermost last
	deep   *[]byte             // those past jsInlineDepth (pooled), nil until needed
	depth  int

	calls     [jsMaxCalls]jsCall
	nCalls    int
	callsLost int // open calls past jsMaxCalls

	text jsTextMatch
}

// scanJS scans script held in s, read through the escape layers flags, and
// returns what it found (jsRedirect, jsDecodeRun).
func scanJS(s []byte, flags uint8) uint8 {
	var j jsScanner
	j.d = escDecoder{s: s, flags: flags}
	j.run()
	if j.deep != nil {
		if cap(*j.deep) <= maxPooledNative {
			jsDeepStacks.Put(j.deep)
		}
	}
	return j.found
}

func (j *jsScanner) run() {
	s := j.d.s
	raw := j.d.flags == 0
	for j.p < len(s) && j.found&jsRedirect == 0 {
		c, n := s[j.p], j.p+1
		if !raw {
			c, n = j.d.at(j.p)
		}
		switch {
		case isJSSpace(c):
			j.p = n
		case c == '/':
			j.slash(n)
		case c == '"' || c == '\'':
			j.token(false)
			j.p = j.readString(n, c, nil)
			j.value()
		case c == '`':
			j.token(false)
			j.p = n
			j.template()
		case isDigit(c):
			j.number(n)
		case c == '.':
			if n < len(s) {
				if c2, _ := j.d.at(n); isDigit(c2) {
					j.number(n)
					continue
				}
			}
			j.token(false)
			j.p, j.afterDot, j.prev = n, true, prevOp
		case isJSIdentPart(c) || c == '\\':
			j.ident()
		default:
			j.p = n
			j.punct(c)
		}
	}
	// Unclosed timer calls are judged on what they hold.
	for i := range j.calls[:j.nCalls] {
		j.closeArg0(&j.calls[i])
	}
}

// token notes the start of a token for the innermost timer call's first
// argument; fn says the token is function or async.
func (j *jsScanner) token(fn bool) {
	if c := j.innerCall(); c != nil && c.first {
		c.first = false
		c.fn = c.fn || fn
	}
}

// innerCall is the tracked call whose bracket is the innermost one, or nil.
func (j *jsScanner) innerCall() *jsCall {
	if j.nCalls == 0 || j.callsLost > 0 || j.calls[j.nCalls-1].depth != j.depth-1 {
		return nil
	}
	return &j.calls[j.nCalls-1]
}

// push opens a bracket (frame: kind and flags); call says what the call
// may run when it is a '('.
func (j *jsScanner) push(frame byte, call uint8) {
	if call != callNone {
		frame |= frameCall
		if j.nCalls < len(j.calls) {
			j.calls[j.nCalls] = jsCall{depth: j.depth, call: call, arg0: true, first: true}
			j.nCalls++
		} else {
			j.callsLost++
		}
	}
	if j.depth < len(j.inline) {
		j.inline[j.depth] = frame
	} else {
		if j.deep == nil {
			j.deep = jsDeepStacks.Get().(*[]byte)
			*j.deep = (*j.deep)[:0]
		}
		*j.deep = append((*j.deep)[:j.depth-len(j.inline)], frame)
	}
	j.depth++
}

// pop closes the innermost bracket and returns its frame byte (0 when none
// is open).
func (j *jsScanner) pop() byte {
	if j.depth == 0 {
		return 0
	}
	j.depth--
	var frame byte
	if j.depth < len(j.inline) {
		frame = j.inline[j.depth]
	} else {
		frame = (*j.deep)[j.depth-len(j.inline)]
	}
	if frame&frameCall != 0 {
		if j.callsLost > 0 {
			j.callsLost--
		} else {
			j.nCalls--
			j.closeArg0(&j.calls[j.nCalls])
		}
	}
	return frame
}

// closeArg0 judges a timer call whose first argument ends.
func (j *jsScanner) closeArg0(c *jsCall) {
	if c.call == callTimer && c.arg0 {
		c.arg0 = false
		if c.dec && !c.fn {
			j.found |= jsDecodeRun
		}
	}
}

// openCalls reports whether a call that may run code is open.
func (j *jsScanner) openCalls() bool { return j.nCalls > 0 || j.callsLost > 0 }

// decoded records a decoder call inside every open call.
func (j *jsScanner) decoded() {
	if j.callsLost > 0 {
		j.found |= jsDecodeRun
	}
	for i := range j.calls[:j.nCalls] {
		switch c := &j.calls[i]; c.call {
		case callEval:
			j.found |= jsDecodeRun
		case callTimer:
			if c.arg0 {
				c.dec = true
			}
		}
	}
}

func (j *jsScanner) resetChain() { j.nChain, j.chainLen, j.afterDot = 0, 0, false }

// name adds a name to the member chain: after '.' it extends the chain,
// otherwise it starts one.
func (j *jsScanner) name(m *jsName, member bool) {
	if !member {
		j.chain[0], j.nChain, j.chainLen = *m, 1, 1
		j.chainBare, j.chainDecl = true, j.declNext
	} else {
		if j.nChain == 0 {
			j.chainBare, j.chainDecl = false, false
		}
		if j.nChain == len(j.chain) {
			j.chain[0], j.chain[1] = j.chain[1], j.chain[2]
			j.nChain--
		}
		j.chain[j.nChain] = *m
		j.nChain++
		if j.chainLen < 1<<20 {
			j.chainLen++
		}
	}
	j.afterDot, j.declNext, j.prev = false, false, prevExpr
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

func (j *jsScanner) skipLine(p int) int {
	s := j.d.s
	if j.d.flags == 0 {
		if i := bytes.IndexAny(s[p:], "\n\r"); i >= 0 {
			return p + i + 1
		}
		return len(s)
	}
	for p < len(s) {
		c, n := j.d.at(p)
		if c == '\n' || c == '\r' {
			return n
		}
		p = n
	}
	return p
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
		if name != nil {
			name.add(c)
		}
		if feed && j.text.feed(c) {
			j.decoded()
		}
		p = n
	}
	return p
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
		if n+1 < len(s) {
			h, n1 := j.d.at(n)
			l, n2 := j.d.at(n1)
			hi, ok1 := markupUnhex(h)
			lo, ok2 := markupUnhex(l)
			if ok1 && ok2 {
				return asciiOr80(rune(hi<<4 | lo)), n2
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
		if feed && c != 0 && j.text.feed(c) {
			j.decoded()
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

// punct handles an operator or bracket c (already consumed).
func (j *jsScanner) punct(c byte) {
	s := j.d.s
	var c2 byte
	n2 := j.p
	if j.p < len(s) {
		c2, n2 = j.d.at(j.p)
	}
	j.token(false)
	switch c {
	case '(':
		call := j.callee()
		frame := frameParen
		if j.ctrlNext {
			frame |= frameCtrl
		}
		j.push(frame, call)
		j.resetChain()
		j.prev, j.ctrlNext, j.declNext = prevOp, false, false
		return
	case ')':
		f := j.pop()
		j.resetChain()
		j.prev = prevExpr
		if f&frameCtrl != 0 {
			j.prev = prevStmt
		}
		return
	case '[':
		if j.prev == prevExpr {
			if m, ok := j.bracketName(); ok {
				j.name(&m, true)
				return
			}
		}
		j.push(frameBracket, callNone)
	case ']':
		j.pop()
		j.resetChain()
		j.prev = prevExpr
		return
	case '{':
		k := frameBlock
		if j.prev == prevOp {
			k = frameObject
		}
		j.push(k, callNone)
		j.resetChain()
		j.prev = prevStmt
		return
	case '}':
		f := j.pop()
		j.resetChain()
		j.prev = prevStmt
		switch f & frameKind {
		case frameTemplate:
			j.template()
		case frameObject:
			j.prev = prevExpr
		}
		return
	case ',':
		if c := j.innerCall(); c != nil {
			j.closeArg0(c)
		}
	case ';':
		j.resetChain()
		j.prev, j.declNext = prevStmt, false
		return
	case '=':
		switch c2 {
		case '=': // == and ===
			j.p = n2
			if j.p < len(s) {
				if c3, n3 := j.d.at(j.p); c3 == '=' {
					j.p = n3
				}
			}
		case '>':
			j.p = n2
			if c := j.innerCall(); c != nil && c.call == callTimer && c.arg0 {
				c.fn = true
			}
			j.resetChain()
			j.prev = prevStmt
			return
		default:
			j.assign()
			return
		}
	case '!', '<', '>':
		if c2 == '=' { // != !== <= >=
			j.p = n2
			if j.p < len(s) {
				if c3, n3 := j.d.at(j.p); c3 == '=' {
					j.p = n3
				}
			}
		}
	case '?':
		if c2 == '.' { // optional chaining keeps the chain
			j.p, j.afterDot, j.prev = n2, true, prevOp
			return
		}
	case '+', '-', '*', '%', '&', '|', '^':
		if c2 == '=' {
			j.p = n2
			j.assign()
			return
		}
	}
	j.resetChain()
	j.prev, j.declNext = prevOp, false
}

// assign judges an assignment to the current member chain.
func (j *jsScanner) assign() {
	if j.nChain > 0 {
		tail := &j.chain[j.nChain-1]
		var before *jsName
		if j.nChain >= 2 {
			before = &j.chain[j.nChain-2]
		}
		switch {
		case tail.is("location"):
			if j.chainLen == 1 && j.chainBare && !j.chainDecl || before != nil && before.isNavRoot() {
				j.found |= jsRedirect
			}
		case tail.is("href"):
			if before != nil && before.is("location") {
				j.found |= jsRedirect
			}
		}
	}
	j.resetChain()
	j.prev, j.declNext = prevOp, false
}

// callee classifies the call about to open on the current member chain.
func (j *jsScanner) callee() uint8 {
	if j.nChain == 0 {
		return callNone
	}
	i := j.nChain - 1
	tail := &j.chain[i]
	if i > 0 && (tail.is("replace") || tail.is("assign")) && j.chain[i-1].is("location") {
		j.found |= jsRedirect
		return callNone
	}
	if i > 0 && (tail.is("call") || tail.is("apply")) {
		i--
		tail = &j.chain[i]
	}
	var before *jsName
	if i > 0 {
		before = &j.chain[i-1]
	}
	switch {
	case tail.is("eval"), tail.is("Function"):
		return callEval
	case tail.is("setTimeout"), tail.is("setInterval"):
		return callTimer
	case (tail.is("write") || tail.is("writeln")) && before != nil && before.is("document"):
		return callEval
	case tail.isDecoder(before != nil && before.is("String")):
		j.decoded()
	}
	return callNone
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
