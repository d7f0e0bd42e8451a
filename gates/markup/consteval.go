package markup

import (
	"encoding/base64"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tdewolff/parse/v2/js"
)

// Constant evaluation: what a script's expression is when it does not
// depend on the run time. Strings, numbers, + and templates of constants,
// bindings assigned once from a constant, the decoders atob, unescape,
// decodeURI, decodeURIComponent, String.fromCharCode and fromCodePoint of
// constant arguments, and [..].join(sep) of constants are evaluated.

// placeholder stands for a value known only at run time in an evaluated
// string.
const placeholder = "_"

// maxEvalDepth bounds the recursion of evaluating one expression.
const maxEvalDepth = 256

// constant returns e's value when it is a constant.
func (s *script) constant(e js.IExpr) (string, bool) {
	v, exact, _ := s.evaluate(e)
	return v, exact
}

// evaluate returns e's value (run-time parts as placeholder), whether it is
// exact, and whether a decoder is applied to something in it.
func (s *script) evaluate(e js.IExpr) (v string, exact, dec bool) {
	ev := s.evaluator()
	v, exact = ev.eval(e, 0)
	if ev.over {
		s.a.found |= Unreadable
	}
	dec = ev.dec
	s.release(ev)
	return v, exact, dec
}

// evaluator returns a fresh evaluator: one the script released, or a new
// one (an evaluation may start another: a member's constant name).
func (s *script) evaluator() *evaluator {
	if n := len(s.evals); n > 0 {
		ev := s.evals[n-1]
		s.evals = s.evals[:n-1]
		return ev
	}
	return &evaluator{s: s}
}

func (s *script) release(ev *evaluator) {
	vars := ev.vars
	clear(vars)
	*ev = evaluator{s: s, vars: vars}
	s.evals = append(s.evals, ev)
}

type evaluator struct {
	s    *script
	dec  bool
	over bool // MaxDecodedBytes reached
	n    int  // bytes produced
	// scanDepth is the depth of the decoder scan under way (scanDecoders).
	scanDepth int
	// Each binding is evaluated once (`b = a + a; c = b + b; ...` would
	// otherwise take time exponential in the chain).
	vars map[*js.Var]evaluated
}

type evaluated struct {
	v  string
	ok bool
}

func (ev *evaluator) eval(e js.IExpr, depth int) (string, bool) {
	if depth > maxEvalDepth {
		return placeholder, false
	}
	if ev.n > ev.s.a.lim.MaxDecodedBytes {
		ev.over = true
		return placeholder, false
	}
	v, ok := ev.eval1(e, depth)
	ev.n += len(v)
	return v, ok
}

func (ev *evaluator) eval1(e js.IExpr, depth int) (string, bool) {
	s := ev.s
	switch e := e.(type) {
	case nil:
		return placeholder, false
	case *js.GroupExpr:
		return ev.eval(e.X, depth+1)
	case *js.CommaExpr:
		if len(e.List) == 0 {
			return placeholder, false
		}
		return ev.eval(e.List[len(e.List)-1], depth+1)
	case *js.LiteralExpr:
		return literal(e)
	case js.LiteralExpr:
		return literal(&e)
	case *js.TemplateExpr:
		if e.Tag != nil {
			ev.scanDecoders(e, depth)
			return placeholder, false
		}
		var b strings.Builder
		exact := true
		for _, p := range e.List {
			b.WriteString(templateChunk(p.Value))
			v, ok := ev.eval(p.Expr, depth+1)
			b.WriteString(v)
			exact = exact && ok
		}
		b.WriteString(templateChunk(e.Tail))
		return b.String(), exact
	case *js.BinaryExpr:
		if e.Op == js.AddToken {
			x, okx := ev.eval(e.X, depth+1)
			y, oky := ev.eval(e.Y, depth+1)
			if len(x)+len(y) > ev.s.a.lim.MaxDecodedBytes {
				ev.over = true
				return placeholder, false
			}
			return x + y, okx && oky
		}
		ev.scanDecoders(e, depth)
		return placeholder, false
	case *js.Var:
		v := root(e)
		if b := s.vars[v]; b.init != nil && b.writes == 0 && v.Decl != js.NoDecl {
			init := b.init
			if r, seen := ev.vars[v]; seen {
				ev.n += len(r.v)
				return r.v, r.ok
			}
			if ev.vars == nil {
				ev.vars = map[*js.Var]evaluated{}
			}
			ev.vars[v] = evaluated{placeholder, false} // a cycle reads as run time
			x, ok := ev.eval(init, depth+1)
			ev.vars[v] = evaluated{x, ok}
			return x, ok
		}
		if init, ok := s.initOf(v); ok {
			ev.scanDecoders(init, depth)
		}
		return placeholder, false
	case *js.CallExpr:
		return ev.call(e, depth)
	}
	ev.scanDecoders(e, depth)
	return placeholder, false
}

// call evaluates a decoder or join call.
func (ev *evaluator) call(c *js.CallExpr, depth int) (string, bool) {
	s := ev.s
	callee := unwrap(c.X)
	args := c.Args.List
	name := ""
	if n, ok := isGlobalName(s, callee, "atob", "unescape", "decodeURI", "decodeURIComponent"); ok {
		name = n
	} else if x, m, ok := member(s, callee); ok && (m == "fromCharCode" || m == "fromCodePoint") {
		if _, isS := isGlobalName(s, x, "String"); isS {
			name = m
		}
	} else if ok && m == "join" {
		if arr, isArr := unwrap(x).(*js.ArrayExpr); isArr {
			return ev.join(arr, args, depth)
		}
	}
	if name == "" {
		ev.scanDecoders(c, depth)
		return placeholder, false
	}
	ev.dec = true
	if name == "fromCharCode" || name == "fromCodePoint" {
		var b strings.Builder
		for _, a := range args {
			v, ok := ev.eval(a.Value, depth+1)
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if !ok || err != nil || n < 0 || n > 0x10FFFF || n != math.Trunc(n) {
				return placeholder, false
			}
			b.WriteRune(rune(n))
		}
		return b.String(), true
	}
	if len(args) == 0 {
		return placeholder, false
	}
	v, ok := ev.eval(args[0].Value, depth+1)
	if !ok {
		return placeholder, false
	}
	switch name {
	case "atob":
		b, err := base64.StdEncoding.DecodeString(stripSpace(v))
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(stripSpace(v), "="))
		}
		if err != nil {
			return placeholder, false // atob throws
		}
		return latin1(b), true
	case "unescape":
		return unescapeLegacy(v), true
	default:
		d, err := url.PathUnescape(v)
		if err != nil {
			return placeholder, false // throws URIError
		}
		return d, true
	}
}

func (ev *evaluator) join(arr *js.ArrayExpr, args []js.Arg, depth int) (string, bool) {
	sep := ","
	exact := true
	if len(args) > 0 {
		v, ok := ev.eval(args[0].Value, depth+1)
		sep, exact = v, ok
	}
	parts := make([]string, 0, len(arr.List))
	for _, el := range arr.List {
		if el.Spread {
			exact = false
			continue
		}
		v, ok := ev.eval(el.Value, depth+1)
		parts = append(parts, v)
		exact = exact && ok
	}
	return strings.Join(parts, sep), exact
}

// scanDecoders notes a decoder applied anywhere inside e (a run-time value
// that decodes), following bindings.
func (ev *evaluator) scanDecoders(e js.IExpr, depth int) {
	if ev.dec || e == nil || depth > maxEvalDepth {
		return
	}
	outer := ev.scanDepth
	ev.scanDepth = depth
	js.Walk((*decoderScan)(ev), e)
	ev.scanDepth = outer
}

// decoderScan is an evaluator as the visitor of its decoder scan (a
// pointer: no allocation per scan).
type decoderScan evaluator

func (d *decoderScan) Enter(n js.INode) js.IVisitor {
	ev := (*evaluator)(d)
	if ev.dec {
		return nil
	}
	s := ev.s
	switch n := n.(type) {
	case *js.CallExpr:
		if isDecoder(s, n.X) {
			ev.dec = true
			return nil
		}
	case *js.Var:
		if init, ok := s.initOf(root(n)); ok && ev.scanDepth < maxResolve {
			ev.scanDecoders(init, ev.scanDepth+maxEvalDepth/maxResolve)
		}
	}
	return d
}

func (*decoderScan) Exit(js.INode) {}

// literal evaluates a string or number literal.
func literal(e *js.LiteralExpr) (string, bool) {
	switch e.TokenType {
	case js.StringToken:
		return unquote(e.Data), true
	case js.DecimalToken, js.BinaryToken, js.OctalToken, js.HexadecimalToken, js.IntegerToken:
		d := strings.ReplaceAll(string(e.Data), "_", "")
		if n, err := strconv.ParseInt(d, 0, 64); err == nil {
			return strconv.FormatInt(n, 10), true
		}
		if f, err := strconv.ParseFloat(d, 64); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64), true
		}
	case js.TrueToken:
		return "true", true
	case js.FalseToken:
		return "false", true
	case js.NullToken:
		return "null", true
	}
	return placeholder, false
}

// unquote evaluates a JavaScript string literal (quotes included).
func unquote(b []byte) string {
	if len(b) < 2 || (b[0] != '"' && b[0] != '\'') {
		return string(b)
	}
	return unescapeJS(string(b[1 : len(b)-1]))
}

// templateChunk evaluates a template chunk as written by the parser
// ("`abc${", "}def`"), its escapes undone.
func templateChunk(b []byte) string {
	s := string(b)
	s = strings.TrimPrefix(s, "`")
	s = strings.TrimPrefix(s, "}")
	s = strings.TrimSuffix(s, "`")
	s = strings.TrimSuffix(s, "${")
	return unescapeJS(s)
}

// unescapeJS undoes the escapes of a string or identifier: \n and kin,
// \xHH, \uHHHH, \u{H...}, legacy octal, line continuations.
func unescapeJS(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\n': // line continuation
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case 'x':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				b.WriteRune(rune(unhex(s[i+1])<<4 | unhex(s[i+2])))
				i += 2
			} else {
				b.WriteByte('x')
			}
		case 'u':
			r, n := unicodeEscape(s[i+1:])
			if n == 0 {
				b.WriteByte('u')
				continue
			}
			i += n
			if r >= 0xD800 && r < 0xDC00 && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if r2, n2 := unicodeEscape(s[i+3:]); n2 > 0 && r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
					i += 2 + n2
				}
			}
			b.WriteRune(r)
		default:
			if c >= '0' && c <= '7' {
				v, j := 0, i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' && v*8+int(s[j]-'0') <= 0xFF {
					v = v*8 + int(s[j]-'0')
					j++
				}
				b.WriteRune(rune(v))
				i = j - 1
				continue
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unicodeEscape reads the part of a \u escape after the u: HHHH or {H...}.
func unicodeEscape(s string) (rune, int) {
	if len(s) > 0 && s[0] == '{' {
		var r rune
		for j := 1; j < len(s) && j < 10; j++ {
			if s[j] == '}' {
				if j == 1 || r > 0x10FFFF {
					return 0, 0
				}
				return r, j + 1
			}
			if !isHex(s[j]) {
				return 0, 0
			}
			r = r<<4 | rune(unhex(s[j]))
		}
		return 0, 0
	}
	if len(s) < 4 {
		return 0, 0
	}
	var r rune
	for j := 0; j < 4; j++ {
		if !isHex(s[j]) {
			return 0, 0
		}
		r = r<<4 | rune(unhex(s[j]))
	}
	return r, 4
}

// unescapeLegacy is JavaScript's unescape: %XX and %uXXXX, invalid escapes
// kept.
func unescapeLegacy(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+5 < len(s) && s[i+1] == 'u' && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
				r, _ := unicodeEscape(s[i+2 : i+6])
				b.WriteRune(r)
				i += 5
				continue
			}
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				b.WriteRune(rune(unhex(s[i+1])<<4 | unhex(s[i+2])))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// latin1 is atob's result: one character per byte.
func latin1(b []byte) string {
	if utf8.Valid(b) {
		ascii := true
		for _, c := range b {
			if c >= 0x80 {
				ascii = false
				break
			}
		}
		if ascii {
			return string(b)
		}
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// isDecoder reports a decoder (also through .call, .apply and bind).
func isDecoder(s *script, callee js.IExpr) bool {
	callee = unwrap(callee)
	if _, ok := isGlobalName(s, callee, "atob", "unescape", "decodeURI", "decodeURIComponent"); ok {
		return true
	}
	x, m, ok := member(s, callee)
	if !ok {
		return false
	}
	if m == "fromCharCode" || m == "fromCodePoint" {
		_, isS := isGlobalName(s, x, "String")
		return isS
	}
	if m == "call" || m == "apply" || m == "bind" {
		return isDecoder(s, x)
	}
	return false
}
