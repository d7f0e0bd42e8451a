package markup

import (
	"strings"

	"github.com/tdewolff/parse/v2/js"
)

// walker reads a script's syntax tree in one context, noting navigations,
// code and markup handed to something that runs it, and references to
// top-level names.
type walker struct {
	s       *script
	c       jsCtx
	withLoc bool // inside with(location)
	withDoc bool // inside with(document)
	fnDepth int  // functions (not arrows) around the node being read
}

func (w *walker) in(c jsCtx) *walker { w2 := *w; w2.c = c; return &w2 }

func (w *walker) walk(n js.INode) {
	if n != nil {
		js.Walk(w, n)
	}
}

// here sets what this is for the node the walker reads (walking a
// subtree may have moved it).
func (w *walker) here() { w.s.thisWindow = w.fnDepth == 0 && !w.s.inline }

func (w *walker) Exit(n js.INode) {
	switch n.(type) {
	case *js.FuncDecl, *js.MethodDecl:
		w.fnDepth--
	}
}

func (w *walker) Enter(n js.INode) js.IVisitor {
	if w.s.a.done() {
		return nil
	}
	w.here()
	switch n := n.(type) {
	case *js.FuncDecl, *js.MethodDecl:
		w.fnDepth++
	case *js.Var:
		w.ref(n)
	case *js.BinaryExpr:
		if isAssign(n.Op) {
			w.assign(n)
			return nil
		}
	case *js.CallExpr:
		w.call(n.X, n.Args.List)
		return nil
	case *js.NewExpr:
		if n.Args != nil && w.isFunctionCtor(w.describe(n.X)) {
			w.sink(sinkFunction, n.Args.List)
		}
	case *js.TemplateExpr:
		if n.Tag != nil {
			w.tagged(n)
		}
	case *js.BindingElement:
		if n.Default != nil && bindsGlobalLocation(w.s, n.Binding) {
			w.nav()
		}
	case *js.ForInStmt:
		if e, ok := n.Init.(js.IExpr); ok && isNavTarget(w.s, e) {
			w.nav()
		}
	case *js.ForOfStmt:
		if e, ok := n.Init.(js.IExpr); ok && isNavTarget(w.s, e) {
			w.nav()
		}
	case *js.WithStmt:
		w.walk(n.Cond)
		w2 := *w
		w2.withLoc = w.withLoc || isLocation(w.s, n.Cond, 0)
		w2.withDoc = w.withDoc || isWindow(w.s, n.Cond, 0)
		w2.walk(n.Body)
		return nil
	}
	return w
}

// ref notes a reference to a top-level name in the current context.
func (w *walker) ref(v *js.Var) {
	a := w.s.a
	name := w.s.globalName(v)
	if name == "" {
		return
	}
	if a.refs == nil {
		a.funcs, a.refs = map[string]*jsFunc{}, map[string]uint8{}
	}
	bit := refGesture // in a function: followed through the caller
	switch w.c.kind {
	case kForced:
		bit = refForced
	case kFunc:
		w.c.fn.calls = append(w.c.fn.calls, name)
	}
	if r := a.refs[name]; r&bit == 0 { // a lookup costs less than an update
		a.refs[name] = r | bit
	}
}

// nav notes a navigation in the current context.
func (w *walker) nav() {
	switch w.c.kind {
	case kForced:
		w.s.a.found |= ForcedRedirect
	case kFunc:
		w.c.fn.nav = true
	}
}

// assign reads an assignment: a navigation, markup assigned to innerHTML and
// its kin, a handler assigned to on<event>.
func (w *walker) assign(n *js.BinaryExpr) {
	s := w.s
	if isNavTarget(s, n.X) {
		w.nav()
	}
	if w.withLoc {
		if v, ok := unwrap(n.X).(*js.Var); ok && (navProps[s.globalName(v)] || s.globalName(v) == "location") {
			w.nav()
		}
	}
	if v, ok := unwrap(n.X).(*js.Var); ok && w.withDoc && s.globalName(v) == "location" {
		w.nav()
	}
	rhs := w
	if x, name, ok := member(s, unwrap(n.X)); ok {
		switch {
		case name == "innerHTML" || name == "outerHTML" || name == "srcdoc":
			if n.Op == js.EqToken || n.Op == js.AddEqToken {
				w.sinkValue(sinkHTML, n.Y)
			}
		case strings.HasPrefix(name, "on") && len(name) > 2:
			rhs = w.in(eventContext(strings.ToLower(name[2:])))
		case name == "location" && isWindow(s, x, 0):
			w.nav()
		}
	}
	w.walk(n.X)
	rhs.walk(n.Y)
}

// Sinks: what a call or assignment hands its value to.
const (
	sinkNone     = iota
	sinkScript   // eval
	sinkFunction // Function: the last argument is the body
	sinkTimer    // setTimeout, setInterval: a string first argument runs
	sinkHTML     // document.write, innerHTML, insertAdjacentHTML (second argument)
)

// callee describes what a call calls, computed once per call: the
// unwrapped expression; for a member, its object and constant name; and
// the global name it reaches (a global binding, or a member of the window).
type callee struct {
	e        js.IExpr
	x        js.IExpr
	m        string
	isMember bool
	global   string
}

func (w *walker) describe(e js.IExpr) callee {
	c := callee{e: unwrap(e)}
	switch v := c.e.(type) {
	case *js.Var:
		c.global = w.s.globalName(v)
		if w.withDoc && (c.global == "write" || c.global == "writeln") {
			c.x = v // document's, through with
		}
	case *js.DotExpr, *js.IndexExpr:
		c.x, c.m, c.isMember = member(w.s, c.e)
		if c.isMember && isWindow(w.s, c.x, 0) {
			c.global = c.m
		}
	}
	return c
}

// call reads a call of e with args.
func (w *walker) call(e js.IExpr, args []js.Arg) {
	w.walk(e)
	w.here()
	c := w.describe(e)
	switch {
	case c.isMember && c.m == "apply" && isGlobalVar(w.s, c.x, "Reflect"):
		// Reflect.apply(f, this, [...]) calls f.
		var inner []js.Arg
		if len(args) >= 3 {
			inner = arrayArgs(args[2].Value)
		}
		if len(args) >= 1 {
			if f := w.describe(args[0].Value); w.navCall(f, inner) || w.sinkCall(f, inner) {
				w.walkArgs(args)
				return
			}
		}
	case c.isMember && (c.m == "call" || c.m == "apply"):
		// f.call(this, ...) and f.apply(this, [...]) call f.
		var inner []js.Arg
		if len(args) > 1 {
			if c.m == "call" {
				inner = args[1:]
			} else {
				inner = arrayArgs(args[1].Value)
			}
		}
		if f := w.describe(c.x); w.navCall(f, inner) || w.sinkCall(f, inner) {
			w.walkArgs(args)
			return
		}
	}
	if w.navCall(c, args) || w.sinkCall(c, args) {
		w.walkArgs(args)
		return
	}
	if w.listener(c, args) {
		return
	}
	w.walkArgs(args)
}

// arrayArgs are the elements of an array literal as arguments (apply's).
func arrayArgs(e js.IExpr) []js.Arg {
	arr, ok := unwrap(e).(*js.ArrayExpr)
	if !ok {
		return nil
	}
	out := make([]js.Arg, 0, len(arr.List))
	for _, el := range arr.List {
		out = append(out, js.Arg{Value: el.Value, Rest: el.Spread})
	}
	return out
}

// isGlobalVar reports e as the global binding name (Reflect, Object,
// String), also as a member of the window.
func isGlobalVar(s *script, e js.IExpr, name string) bool {
	n, ok := isGlobalName(s, e, name)
	return ok && n == name
}

func (w *walker) walkArgs(args []js.Arg) {
	for _, a := range args {
		w.walk(a.Value)
	}
}

// navCall reports (and notes) a call that navigates: location.assign and
// replace, window.open to the top or parent, Reflect.set and Object.assign
// on the location.
func (w *walker) navCall(c callee, args []js.Arg) bool {
	s := w.s
	switch {
	case c.isMember && (c.m == "assign" || c.m == "replace") && isLocation(s, c.x, 0),
		w.withLoc && (c.global == "assign" || c.global == "replace"):
		w.nav()
		return true
	case c.global == "open" && len(args) >= 2:
		if t, exact := s.constant(args[1].Value); exact {
			switch strings.ToLower(strings.TrimSpace(t)) {
			case "_top", "_parent", "_self":
				w.nav()
				return true
			}
		}
	case c.isMember && c.m == "set" && len(args) >= 2 && isGlobalVar(s, c.x, "Reflect"):
		k, exact := s.constant(args[1].Value)
		if isLocation(s, args[0].Value, 0) && (!exact || navProps[k]) || isWindow(s, args[0].Value, 0) && (!exact || k == "location") {
			w.nav()
			return true
		}
	case c.isMember && (c.m == "assign" || c.m == "defineProperty" || c.m == "defineProperties") && len(args) >= 2 && isGlobalVar(s, c.x, "Object"):
		switch {
		case isLocation(s, args[0].Value, 0):
			w.nav()
			return true
		case isWindow(s, args[0].Value, 0):
			for _, src := range args[1:] {
				if setsLocation(s, src.Value) {
					w.nav()
					return true
				}
			}
		}
	}
	return false
}

// setsLocation reports an object (literal, or the name in defineProperty)
// that sets a location property.
func setsLocation(s *script, e js.IExpr) bool {
	if v, exact := s.constant(e); exact {
		return v == "location"
	}
	obj, ok := unwrap(e).(*js.ObjectExpr)
	if !ok {
		return false
	}
	for _, p := range obj.List {
		if p.Spread || p.Name == nil {
			return true // cannot tell: fail closed
		}
		if p.Name.Computed != nil {
			if v, exact := s.constant(p.Name.Computed); !exact || v == "location" {
				return true
			}
			continue
		}
		if identName(p.Name.Literal.Data) == "location" || unquote(p.Name.Literal.Data) == "location" {
			return true
		}
	}
	return false
}

// sinkCall reports (and reads) a call that runs code or markup.
func (w *walker) sinkCall(c callee, args []js.Arg) bool {
	switch {
	case c.global == "eval" || c.global == "execScript":
		w.sink(sinkScript, args)
	case w.isFunctionCtor(c):
		w.sink(sinkFunction, args)
	case c.global == "setTimeout" || c.global == "setInterval" || c.global == "setImmediate":
		w.sink(sinkTimer, args)
	case w.isWrite(c):
		w.sink(sinkHTML, args)
	case c.isMember && c.m == "insertAdjacentHTML" && len(args) >= 2:
		w.sinkValue(sinkHTML, args[1].Value)
	case c.isMember && (c.m == "setHTMLUnsafe" || c.m == "createContextualFragment") && len(args) >= 1:
		w.sinkValue(sinkHTML, args[0].Value)
	default:
		return false
	}
	return true
}

// isFunctionCtor reports Function under any name: the global, or the
// constructor of a function (`(function(){}).constructor`,
// `x.constructor.constructor`).
func (w *walker) isFunctionCtor(c callee) bool {
	if c.global == "Function" {
		return true
	}
	if !c.isMember || c.m != "constructor" {
		return false
	}
	switch x := unwrap(c.x).(type) {
	case *js.FuncDecl, *js.ArrowFunc:
		return true
	case *js.DotExpr, *js.IndexExpr:
		_, m2, ok := member(w.s, x)
		return ok && m2 == "constructor"
	}
	return false
}

// isWrite reports document.write and writeln, through document.open()'s
// result and inside with(document).
func (w *walker) isWrite(c callee) bool {
	if _, isVar := c.e.(*js.Var); isVar {
		return c.x != nil // write inside with(document)
	}
	return c.isMember && (c.m == "write" || c.m == "writeln") && isDocument(w.s, c.x)
}

// isDocument reports the document (or the window, whose document is meant)
// and document.open()'s result.
func isDocument(s *script, e js.IExpr) bool {
	e = unwrap(e)
	if isWindow(s, e, 0) {
		return true
	}
	if c, ok := e.(*js.CallExpr); ok {
		x, m, ok := member(s, unwrap(c.X))
		return ok && m == "open" && isWindow(s, x, 0)
	}
	return false
}

// tagged reads a tagged template: Function`...`, a timer or
// document.write run its text (eval of the strings array returns it).
func (w *walker) tagged(n *js.TemplateExpr) {
	c := w.describe(n.Tag)
	k := sinkNone
	switch {
	case w.isFunctionCtor(c), c.global == "setTimeout" || c.global == "setInterval" || c.global == "setImmediate":
		k = sinkFunction
	case w.isWrite(c):
		k = sinkHTML
	default:
		return
	}
	t := *n
	t.Tag = nil
	w.sinkValue(k, &t)
}

// sink reads the argument of a call that runs it.
func (w *walker) sink(kind int, args []js.Arg) {
	if len(args) == 0 {
		return
	}
	switch kind {
	case sinkFunction:
		w.sinkValue(kind, args[len(args)-1].Value)
	case sinkHTML:
		for _, a := range args {
			w.sinkValue(kind, a.Value)
		}
	default:
		w.sinkValue(kind, args[0].Value)
	}
}

// sinkValue reads a value that runs as script or markup: a constant is read
// as what it becomes; a value built at run time from a decoder is
// decode-and-run; what else is known of it (its constant parts) is read
// too, without taking a parse error for unreadable.
func (w *walker) sinkValue(kind int, e js.IExpr) {
	s := w.s
	a := s.a
	switch unwrap(e).(type) {
	case *js.FuncDecl, *js.ArrowFunc:
		return // a function: read where it is walked
	}
	v, exact, dec := s.evaluate(e)
	if !exact && dec {
		a.found |= DecodeAndRun
	}
	if v == "" || v == placeholder {
		return
	}
	if !a.spend(len(v)) {
		return
	}
	if !exact {
		// Read the known parts; a parse error here is the placeholder's.
		probe := newAnalysis(a.lim, a.judge, a.secure)
		probe.budget, probe.observe = a.budget, a.observe
		probe.funcs, probe.refs = a.sharedFuncs()
		w.read(probe, kind, v)
		a.found |= probe.found &^ Unreadable
		a.insecure = a.insecure || probe.insecure
		return
	}
	w.read(a, kind, v)
}

func (w *walker) read(a *analysis, kind int, v string) {
	switch kind {
	case sinkHTML:
		if w.c.kind == kFunc {
			// Markup written by a function: its scripts run when it does.
			sub := a.sub()
			sub.readHTML([]byte(v), w.s.depth+1)
			if f := sub.result(); f&ForcedRedirect != 0 {
				w.c.fn.nav = true
				sub.found &^= ForcedRedirect
			}
			a.found |= sub.found
			a.insecure = a.insecure || sub.insecure
			return
		}
		if w.c.kind == kGesture {
			sub := a.sub()
			sub.readHTML([]byte(v), w.s.depth+1)
			a.found |= sub.result() &^ ForcedRedirect
			a.insecure = a.insecure || sub.insecure
			return
		}
		a.readHTML([]byte(v), w.s.depth+1)
	default:
		a.readScriptIn([]byte(v), w.c, w.s.depth+1)
	}
}

// readScriptIn reads eval'd code in the context of its caller.
func (a *analysis) readScriptIn(src []byte, c jsCtx, depth int) {
	if !a.enter(depth) || a.done() || !a.judge && !mayWriteMarkup(src) {
		return
	}
	ast, err := parseJS(src, false)
	if err != nil {
		a.found |= Unreadable
		return
	}
	s := newScript(a, ast, c.kind != kForced, depth)
	s.run(c)
}

// listener reads a handler registration: addEventListener, jQuery's on
// and its shorthands, attachEvent. The handler runs in its event's context.
func (w *walker) listener(c callee, args []js.Arg) bool {
	if !c.isMember || len(args) == 0 {
		return false
	}
	var ctx jsCtx
	handlers := args
	switch c.m {
	case "addEventListener", "on", "one", "bind", "live", "attachEvent", "removeEventListener":
		ev, exact := w.s.constant(args[0].Value)
		if !exact {
			return false
		}
		ctx = eventsContext(ev, c.m == "attachEvent")
		w.walk(args[0].Value)
		handlers = args[1:]
	default:
		if !gestureEvents[strings.ToLower(c.m)] {
			return false
		}
		ctx = ctxGesture
	}
	hw := w.in(ctx)
	for _, a := range handlers {
		hw.walk(a.Value)
	}
	return true
}
