package markup

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// Script is read with tdewolff/parse/v2/js: a full ECMAScript parser that
// resolves every identifier to its declaration, so a parameter, a local or
// a class field named location is not the page's location.

// jsCtx is when code runs: without a gesture (forced), on a user gesture,
// or inside a top-level function whose callers are resolved at the end.
type jsCtx struct {
	kind uint8
	fn   *jsFunc
}

const (
	kForced uint8 = iota
	kGesture
	kFunc
)

var (
	ctxForced  = jsCtx{kind: kForced}
	ctxGesture = jsCtx{kind: kGesture}
)

// jsFunc is a function declared at the top level of a script: whether it
// navigates, and the top-level names it references.
type jsFunc struct {
	nav   bool
	calls []string
}

// How a top-level name is referenced.
const (
	refForced uint8 = 1 << iota
	refGesture
)

// gestureEvents are the events that carry a user gesture (transient
// activation): a navigation in their handlers is one the user asked for.
var gestureEvents = map[string]bool{
	"click": true, "dblclick": true, "mousedown": true, "mouseup": true, "pointerdown": true, "pointerup": true,
	"touchstart": true, "touchend": true, "keydown": true, "keyup": true, "submit": true,
}

// eventContext is the context of a handler of the event ev (lower case).
func eventContext(ev string) jsCtx {
	if gestureEvents[ev] {
		return ctxGesture
	}
	return ctxForced
}

// readScript parses src (a handler or javascript: URL body when inline: a
// function body whose declarations are local) and reads it in context c.
func (a *analysis) readScript(src []byte, c jsCtx, inline bool, depth int) {
	if !a.enter(depth) || a.done() || jsBlank(src) || !a.judge && !mayWriteMarkup(src) {
		return
	}
	if a.observe != nil {
		a.observe(src, inline)
	}
	if inline && inert(src) {
		return
	}
	a.parseAndRun(src, c, inline, depth)
}

func (a *analysis) parseAndRun(src []byte, c jsCtx, inline bool, depth int) {
	ast, err := parseJS(src, inline)
	if err != nil {
		a.found |= Unreadable
		return
	}
	s := newScript(a, ast, inline, depth)
	s.run(c)
}

// jsBlank reports script that is only ECMAScript white space and line
// terminators (nothing to run). Unicode's other spaces are not: a lone
// U+0085 does not parse, so such a script is read, and is Unreadable.
func jsBlank(src []byte) bool {
	for len(src) > 0 {
		r, n := utf8.DecodeRune(src)
		switch {
		case r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == ' ',
			r == 0xa0 || r == 0xfeff || r == 0x1680 || r >= 0x2000 && r <= 0x200a,
			r == 0x2028 || r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000:
		default:
			return false
		}
		src = src[n:]
	}
	return true
}

// inertBodies are the handler and javascript: URL bodies that do nothing
// and name nothing, as ads write them (href="javascript:void(0)",
// onclick="...; return false" aside): their reading finds nothing and
// notes no name (TestInertBodies), so they are not parsed.
var inertBodies = []string{"void(0)", "void 0", "false", "return false", "void(0);", "void 0;", "false;", "return false;"}

// inert reports an inline body that is one of inertBodies, ASCII white
// space around it aside (script's own: a U+0085 that bytes.TrimSpace would
// trim does not parse).
func inert(src []byte) bool {
	t := bytes.Trim(src, " \t\n\r\f\v")
	if len(t) > len("return false;") {
		return false
	}
	for _, b := range inertBodies {
		if string(t) == b {
			return true
		}
	}
	return false
}

// mayWriteMarkup reports script that may hand markup to the document
// (document.write, innerHTML and kin, srcdoc, escaped names): the only
// script Insecure alone needs to read.
func mayWriteMarkup(src []byte) bool {
	return bytes.Contains(src, []byte("write")) || bytes.Contains(src, []byte("HTML")) ||
		bytes.Contains(src, []byte("srcdoc")) || bytes.IndexByte(src, '\\') >= 0
}

// macro matches the ad-server macros a creative carries until the exchange
// or the ad server fills them in (%%CLICK_URL_UNESC%%, ${AUCTION_PRICE}).
var macro = regexp.MustCompile(`%%[A-Za-z0-9_:.\-]+%%|\$\{[A-Z0-9_]+\}`)

// parseJS parses src; when it does not parse, it is parsed again with its
// macros replaced by a number, as they will be once filled in.
func parseJS(src []byte, inline bool) (*js.AST, error) {
	ast, err := parseJSOnce(src, inline)
	if err != nil && macro.Match(src) {
		if ast2, err2 := parseJSOnce(macro.ReplaceAll(src, []byte("0")), inline); err2 == nil {
			return ast2, nil
		}
	}
	return ast, err
}

func parseJSOnce(src []byte, inline bool) (ast *js.AST, err error) {
	// The parser writes a NUL after its input: it gets a copy.
	buf := make([]byte, len(src), len(src)+1)
	copy(buf, src)
	return js.Parse(parse.NewInputBytes(buf), js.Options{Inline: inline})
}

// script is one parsed script and what the analysis knows of its bindings.
type script struct {
	a       *analysis
	ast     *js.AST
	depth   int
	vars    map[*js.Var]binding // what is known of each binding (nil until one is)
	globals int                 // var and function declarations of the global scope
	inline  bool                // a handler or javascript: URL body (this is not the window)
	evals   []*evaluator        // evaluators released for reuse

	// thisWindow: the node being read is outside every function (arrows
	// aside) of a script element, where this is the window.
	thisWindow bool
}

// binding is what the analysis knows of a binding: one map for the three,
// a lookup each (the script's walk asks of every identifier).
type binding struct {
	init   js.IExpr // the initializer or an assigned value (nil: none)
	writes int      // assignments besides the initializer
	global bool     // a var or function declaration of the global scope
}

func newScript(a *analysis, ast *js.AST, inline bool, depth int) *script {
	s := &script{a: a, ast: ast, depth: depth, inline: inline}
	if !inline {
		for _, v := range ast.BlockStmt.Scope.Declared {
			if v.Decl == js.VariableDecl || v.Decl == js.FunctionDecl {
				b := s.vars[v]
				b.global = true
				s.set(v, b)
				s.globals++
			}
		}
	}
	js.Walk(bindings{s}, ast)
	return s
}

func (s *script) set(v *js.Var, b binding) {
	if s.vars == nil {
		s.vars = make(map[*js.Var]binding, 16)
	}
	s.vars[v] = b
}

// initOf is the initializer or assigned value of a binding (the one that
// aliases the window, if any).
func (s *script) initOf(v *js.Var) (js.IExpr, bool) {
	b := s.vars[v]
	return b.init, b.init != nil
}

// bindings collects initializers and assignments of plain bindings.
type bindings struct{ s *script }

func (b bindings) Enter(n js.INode) js.IVisitor {
	switch n := n.(type) {
	case *js.BindingElement:
		if v, ok := n.Binding.(*js.Var); ok && n.Default != nil {
			b.s.setInit(root(v), n.Default)
		}
	case *js.BinaryExpr:
		if v, ok := n.X.(*js.Var); ok && isAssign(n.Op) {
			v = root(v)
			bv := b.s.vars[v]
			bv.writes++
			if bv.init == nil || isWindow(b.s, n.Y, 0) {
				bv.init = n.Y // an alias of the window wins
			}
			b.s.set(v, bv)
		}
	}
	return b
}

func (b bindings) Exit(js.INode) {}

func (s *script) setInit(v *js.Var, e js.IExpr) {
	b := s.vars[v]
	if b.init != nil {
		b.writes++
	}
	if b.init == nil || isWindow(s, e, 0) {
		b.init = e
	}
	s.set(v, b)
}

// root follows a use to the variable it was merged into.
func root(v *js.Var) *js.Var {
	for v.Link != nil {
		v = v.Link
	}
	return v
}

// globalName returns the page-global name v refers to: undeclared, or
// declared with var or function at a script's top level ("" otherwise).
func (s *script) globalName(v *js.Var) string {
	v = root(v)
	if v.Decl == js.NoDecl || s.vars[v].global {
		return identName(v.Data)
	}
	return ""
}

// run reads the script's statements in c; top-level functions are
// registered by name and read in their own context.
func (s *script) run(c jsCtx) {
	w := &walker{s: s, c: c}
	for _, st := range s.ast.BlockStmt.List {
		if c.kind == kForced && s.globals > 0 {
			if s.topFunction(st) {
				continue
			}
		}
		js.Walk(w, st)
	}
}

// topFunction registers a top-level function declaration (or a var bound to
// a function expression) and reads its body in its own context.
func (s *script) topFunction(st js.IStmt) bool {
	var name string
	var body js.INode
	switch st := st.(type) {
	case *js.FuncDecl:
		if st.Name == nil {
			return false
		}
		name, body = identName(st.Name.Data), st
	case *js.VarDecl:
		if len(st.List) != 1 || st.TokenType != js.VarToken {
			return false
		}
		v, ok := st.List[0].Binding.(*js.Var)
		if !ok {
			return false
		}
		switch f := st.List[0].Default.(type) {
		case *js.FuncDecl, *js.ArrowFunc:
			name, body = identName(v.Data), f
		default:
			return false
		}
	default:
		return false
	}
	a := s.a
	if a.funcs == nil {
		a.funcs, a.refs = map[string]*jsFunc{}, map[string]uint8{}
	}
	f := a.funcs[name]
	if f == nil {
		f = &jsFunc{}
		a.funcs[name] = f
	}
	fw := &walker{s: s, c: jsCtx{kind: kFunc, fn: f}, fnDepth: 1}
	switch b := body.(type) {
	case *js.FuncDecl:
		js.Walk(fw, &b.Params)
		js.Walk(fw, &b.Body)
	default:
		js.Walk(fw, b)
	}
	return true
}

// forcedFunctionNavigates resolves the top-level functions: one referenced
// without a gesture, never referenced (its callers cannot be followed), or
// called from such a function runs without a gesture; true when one of
// those navigates.
func (a *analysis) forcedFunctionNavigates() bool {
	var queue []string
	seen := map[string]bool{}
	for name := range a.funcs {
		if r := a.refs[name]; r&refForced != 0 || r == 0 {
			queue = append(queue, name)
			seen[name] = true
		}
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		f := a.funcs[name]
		if f.nav {
			return true
		}
		for _, c := range f.calls {
			if _, ok := a.funcs[c]; ok && !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return false
}

// identName is an identifier with its \u escapes undone. Without escapes
// it views b without copying: the parsed script's buffer is never written
// and outlives the analysis that holds the name.
func identName(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return unescapeJS(string(b))
}

// isAssign reports the assignment operators, logical ones included.
func isAssign(op js.TokenType) bool {
	switch op {
	case js.EqToken, js.AddEqToken, js.SubEqToken, js.MulEqToken, js.DivEqToken, js.ModEqToken, js.ExpEqToken,
		js.LtLtEqToken, js.GtGtEqToken, js.GtGtGtEqToken, js.BitAndEqToken, js.BitOrEqToken, js.BitXorEqToken,
		js.AndEqToken, js.OrEqToken, js.NullishEqToken:
		return true
	}
	return false
}

// windowNames are the globals that are the window (or, for document, hold
// its location).
var windowNames = map[string]bool{
	"window": true, "top": true, "parent": true, "self": true, "frames": true, "globalThis": true,
	"document": true, "content": true, "opener": true, "defaultView": true,
}

// maxResolve bounds how far aliases and constants are followed.
const maxResolve = 16

// unwrap removes parentheses and comma sequences: (0, x) is x.
func unwrap(e js.IExpr) js.IExpr {
	for {
		switch g := e.(type) {
		case *js.GroupExpr:
			e = g.X
		case *js.CommaExpr:
			if len(g.List) == 0 {
				return e
			}
			e = g.List[len(g.List)-1]
		default:
			return e
		}
	}
}

// isWindow reports an expression that is the window (or document) under
// any alias the script resolves.
func isWindow(s *script, e js.IExpr, depth int) bool {
	if depth > maxResolve {
		return false
	}
	switch e := unwrap(e).(type) {
	case *js.LiteralExpr:
		return e.TokenType == js.ThisToken && s.thisWindow
	case js.LiteralExpr:
		return e.TokenType == js.ThisToken && s.thisWindow
	case *js.Var:
		if n := s.globalName(e); n != "" {
			if windowNames[n] {
				return true
			}
		}
		if init, ok := s.initOf(root(e)); ok {
			return isWindow(s, init, depth+1)
		}
	case *js.DotExpr:
		x, name, ok := member(s, e)
		return ok && windowNames[name] && isWindow(s, x, depth+1)
	case *js.IndexExpr: // the object first: a key is evaluated only on the window
		if !isWindow(s, e.X, depth+1) {
			return false
		}
		_, name, ok := member(s, e)
		return ok && windowNames[name]
	case *js.CondExpr:
		return isWindow(s, e.X, depth+1) || isWindow(s, e.Y, depth+1)
	case *js.BinaryExpr:
		switch e.Op {
		case js.OrToken, js.AndToken, js.NullishToken:
			return isWindow(s, e.X, depth+1) || isWindow(s, e.Y, depth+1)
		}
		if isAssign(e.Op) {
			return isWindow(s, e.Y, depth+1)
		}
	}
	return false
}

// member splits a member access into its object and its constant property
// name (dotted, or in brackets of a constant value).
func member(s *script, e js.IExpr) (x js.IExpr, name string, ok bool) {
	switch e := e.(type) {
	case *js.DotExpr:
		if l, isLit := e.Y.(js.LiteralExpr); isLit {
			return e.X, identName(l.Data), true
		}
	case *js.IndexExpr:
		if v, exact := s.constant(e.Y); exact {
			return e.X, v, true
		}
	}
	return nil, "", false
}

// isLocation reports an expression that is the page's location object.
func isLocation(s *script, e js.IExpr, depth int) bool {
	if depth > maxResolve {
		return false
	}
	switch e := unwrap(e).(type) {
	case *js.Var:
		if s.globalName(e) == "location" {
			return true
		}
		if init, ok := s.initOf(root(e)); ok {
			return isLocation(s, init, depth+1)
		}
	case *js.DotExpr:
		x, name, ok := member(s, e)
		return ok && name == "location" && isWindow(s, x, depth+1)
	case *js.IndexExpr:
		if !isWindow(s, e.X, depth+1) {
			return false
		}
		_, name, ok := member(s, e)
		return ok && name == "location"
	case *js.CondExpr:
		return isLocation(s, e.X, depth+1) || isLocation(s, e.Y, depth+1)
	}
	return false
}

// navProps are the properties of location whose assignment loads a page
// (hash only scrolls).
var navProps = map[string]bool{
	"href": true, "pathname": true, "search": true, "host": true, "hostname": true, "protocol": true, "port": true,
}

// isNavTarget reports an assignment target that navigates: the location
// object, one of its navigating properties, or a destructuring pattern
// holding one.
func isNavTarget(s *script, e js.IExpr) bool {
	e = unwrap(e)
	switch e := e.(type) {
	case *js.Var:
		// Assigning a binding rebinds it: only the global location navigates.
		return s.globalName(e) == "location"
	case *js.DotExpr, *js.IndexExpr:
		if isLocation(s, e, 0) {
			return true
		}
		if ix, isIndex := e.(*js.IndexExpr); isIndex && !isLocation(s, ix.X, 0) {
			return false
		}
		x, name, ok := member(s, e)
		return ok && navProps[name] && isLocation(s, x, 0)
	case *js.ArrayExpr:
		for _, el := range e.List {
			if el.Value != nil && isNavTarget(s, defaultTarget(el.Value)) {
				return true
			}
		}
	case *js.ObjectExpr:
		for _, p := range e.List {
			if p.Value != nil && isNavTarget(s, defaultTarget(p.Value)) {
				return true
			}
		}
	}
	return false
}

// defaultTarget is the target of a destructuring element with a default
// (`[a = 1] = x`).
func defaultTarget(e js.IExpr) js.IExpr {
	if b, ok := e.(*js.BinaryExpr); ok && b.Op == js.EqToken {
		return b.X
	}
	return e
}

// bindsGlobalLocation reports a binding pattern that declares the page's
// location (a top-level `var location = u`).
func bindsGlobalLocation(s *script, b js.IBinding) bool {
	switch b := b.(type) {
	case *js.Var:
		return s.globalName(b) == "location"
	case *js.BindingArray:
		for _, el := range b.List {
			if el.Binding != nil && bindsGlobalLocation(s, el.Binding) {
				return true
			}
		}
	case *js.BindingObject:
		for _, it := range b.List {
			if it.Value.Binding != nil && bindsGlobalLocation(s, it.Value.Binding) {
				return true
			}
		}
	}
	return false
}

// isGlobalName reports a global (or window member) named one of names.
func isGlobalName(s *script, e js.IExpr, names ...string) (string, bool) {
	e = unwrap(e)
	var n string
	switch e := e.(type) {
	case *js.Var:
		n = s.globalName(e)
	case *js.DotExpr, *js.IndexExpr:
		x, name, ok := member(s, e)
		if !ok || !isWindow(s, x, 0) {
			return "", false
		}
		n = name
	}
	for _, want := range names {
		if n == want && n != "" {
			return n, true
		}
	}
	return "", false
}

// eventsContext is the context of a handler of the events of a listener
// registration's first argument v ("click touchend" in jQuery; each lower
// case, a jQuery namespace cut, an "on" prefix stripped when strip): a
// gesture only when there are events and every one carries a gesture.
func eventsContext(v string, strip bool) jsCtx {
	seen := false
	for e := range strings.FieldsSeq(v) {
		e = strings.ToLower(e)
		if j := strings.IndexByte(e, '.'); j >= 0 { // jQuery namespaces
			e = e[:j]
		}
		if strip {
			e = strings.TrimPrefix(e, "on")
		}
		if !gestureEvents[e] {
			return ctxForced
		}
		seen = true
	}
	if !seen {
		return ctxForced
	}
	return ctxGesture
}
