package gates

// JavaScript in markup, for markupSafety: a lexer over script read through an
// escDecoder (a <script> body as written, an event-handler attribute through
// character references) that finds forced redirects and decode-and-run calls.
// It reads tokens, not text, so whitespace and comments between tokens are
// ignored, `==` is a comparison and not an assignment, and names in strings,
// comments and regular expressions are not code; a string in brackets names a
// member (`top["loc"+"ation"]`, `window['eval']`), and JavaScript escapes in
// identifiers and strings are undone (`\u0065val`, `'\x6cocation'`). The
// strings a call runs are read too, joined: as script for eval, Function and
// a timer's first argument, as markup for document.write.
//
// Without a parser, a '/' is read as the start of a regular expression unless
// the token before it ends an expression (a name, a literal, ')' of a call,
// ']', '}' of an object literal), the usual lexer heuristic. Nesting is
// tracked at any depth (past 64 levels in a pooled buffer). Time is linear in
// the input (a bracketed member name may be read twice), and nothing is
// allocated once the pool is warm.

import "sync"

// What scanJS finds.
const (
	jsRedirect  uint8 = 1 << iota // an assignment to a top-level location, location.replace( ...
	jsDecodeRun                   // eval, Function, a string timer or document.write fed by a decoder
)

// What a call may run.
const (
	callNone  uint8 = iota
	callEval        // eval, Function: any decoder in its arguments counts; its strings run as script
	callTimer       // setTimeout, setInterval: a decoder in a first argument that is not a function; a string first argument runs as script
	callWrite       // document.write, writeln: any decoder in its arguments counts; its strings are written as HTML
)

// What the strings gathered from open calls are read as.
const (
	codeJS   uint8 = 1 << iota // script (eval, Function, a timer's first argument)
	codeHTML                   // markup (document.write)
)

// maxCode bounds the strings gathered from one outermost call; past it they
// are scanned and gathering starts again.
const maxCode = 64 << 10

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

	// The strings of the open calls that run them, joined (so that
	// '<scr' + 'ipt>' is read as one), escapes undone; scanned as code
	// and markup (codeKinds) when the outermost such call closes. nest is
	// how deep in markup and code this script is.
	code      *[]byte
	codeKinds uint8
	nest      int
}

// scanJS scans script held in s, read through the escape layers flags, at
// nesting depth (markup and code inside markup and code, up to
// maxMarkupNesting), and returns what it found: jsRedirect, jsDecodeRun,
// and markupJSURL in markup a document.write call writes.
func scanJS(s []byte, flags uint8, depth int) uint8 {
	var j jsScanner
	j.d = escDecoder{s: s, flags: flags}
	j.nest = depth
	j.run()
	j.flushCode()
	if j.deep != nil {
		if cap(*j.deep) <= maxPooledNative {
			jsDeepStacks.Put(j.deep)
		}
	}
	if j.code != nil {
		releaseUnescapedNative(j.code)
	}
	return j.found
}

// gather adds the unit c of a string to the code of the open calls that run
// it, if any does.
func (j *jsScanner) gather(c byte) {
	var kinds uint8
	if j.callsLost > 0 {
		kinds = codeJS | codeHTML
	}
	for i := range j.calls[:j.nCalls] {
		switch k := &j.calls[i]; {
		case k.call == callEval, k.call == callTimer && k.arg0:
			kinds |= codeJS
		case k.call == callWrite:
			kinds |= codeHTML
		}
	}
	if kinds == 0 || j.nest+1 >= maxMarkupNesting {
		return
	}
	if j.code == nil {
		j.code = nativeUnescapedBufs.Get().(*[]byte)
		*j.code = (*j.code)[:0]
	}
	j.codeKinds |= kinds
	*j.code = append(*j.code, c)
	if len(*j.code) >= maxCode {
		j.flushCode()
	}
}

// flushCode scans the gathered strings as what their calls make of them.
func (j *jsScanner) flushCode() {
	if j.code == nil || len(*j.code) == 0 {
		return
	}
	code := *j.code
	if j.codeKinds&codeJS != 0 {
		j.found |= scanJS(code, 0, j.nest+1)
	}
	if j.codeKinds&codeHTML != 0 {
		j.found |= unsafeMarkup(code, false, j.nest+1)
	}
	*j.code, j.codeKinds = code[:0], 0
}

func (j *jsScanner) run() {
	s := j.d.s
	raw := j.d.flags == 0
	for j.p < len(s) && j.found&jsRedirect == 0 {
		c, n := s[j.p], j.p+1
		if !raw {
			c, n = j.d.at(j.p)
		}
		if c >= 0x80 {
			if l, _ := j.uspace(c, j.p, n); l > 0 {
				j.p += l
				continue
			}
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
		if !j.openCalls() {
			j.flushCode()
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
		case callEval, callWrite:
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
	case tail.is("constructor") && i > 0:
		// x.constructor.constructor(...) is Function reached without
		// naming it.
		return callEval
	case tail.is("setTimeout"), tail.is("setInterval"):
		return callTimer
	case (tail.is("write") || tail.is("writeln")) && before != nil && before.is("document"):
		return callWrite
	case tail.isDecoder(before != nil && before.is("String")):
		j.decoded()
	}
	return callNone
}
