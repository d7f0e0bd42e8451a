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
}

func (w *walker) in(c jsCtx) *walker { w2 := *w; w2.c = c; return &w2 }

func (w *walker) walk(n js.INode) {
	if n != nil {
		js.Walk(w, n)
	}
}

func (w *walker) Exit(js.INode) {}

func (w *walker) Enter(n js.INode) js.IVisitor {
	if w.s.a.done() {
		return nil
	}
	switch n := n.(type) {
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
		if n.Args != nil && w.isFunctionCtor(n.X) {
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
	switch w.c.kind {
	case kForced:
		a.refs[name] |= refForced
	case kGesture:
		a.refs[name] |= refGesture
	case kFunc:
		w.c.fn.calls = append(w.c.fn.calls, name)
		a.refs[name] |= refGesture // followed through the caller
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

// call reads a call of callee with args.
func (w *walker) call(callee js.IExpr, args []js.Arg) {
	s := w.s
	callee0 := callee
	callee = unwrap(callee)
	w.walk(callee0)

	// f.call(this, ...) and f.apply(this, [...]) call f.
	if x, m, ok := member(s, callee); ok && (m == "call" || m == "apply") {
		inner := x
		var innerArgs []js.Arg
		if len(args) > 1 {
			if m == "call" {
				innerArgs = args[1:]
			} else if arr, ok := unwrap(args[1].Value).(*js.ArrayExpr); ok {
				for _, el := range arr.List {
					innerArgs = append(innerArgs, js.Arg{Value: el.Value, Rest: el.Spread})
				}
			}
		}
		if w.navCall(unwrap(inner), innerArgs) || w.sinkCall(unwrap(inner), innerArgs) {
			w.walkArgs(args)
			return
		}
	}
	if _, ok := isGlobalName(s, callee, "Reflect"); !ok {
		if x, m, ok := member(s, callee); ok {
			if _, isR := isGlobalName(s, x, "Reflect"); isR && m == "apply" && len(args) >= 1 {
				var innerArgs []js.Arg
				if len(args) >= 3 {
					if arr, ok := unwrap(args[2].Value).(*js.ArrayExpr); ok {
						for _, el := range arr.List {
							innerArgs = append(innerArgs, js.Arg{Value: el.Value})
						}
					}
				}
				if w.navCall(unwrap(args[0].Value), innerArgs) || w.sinkCall(unwrap(args[0].Value), innerArgs) {
					w.walkArgs(args)
					return
				}
			}
		}
	}
	if w.navCall(callee, args) {
		w.walkArgs(args)
		return
	}
	if w.sinkCall(callee, args) {
		w.walkArgs(args)
		return
	}
	if w.listener(callee, args) {
		return
	}
	w.walkArgs(args)
}

func (w *walker) walkArgs(args []js.Arg) {
	for _, a := range args {
		w.walk(a.Value)
	}
}

// navCall reports (and notes) a call that navigates: location.assign and
// replace, window.open to the top or parent, Reflect.set and Object.assign
// on the location.
func (w *walker) navCall(callee js.IExpr, args []js.Arg) bool {
	s := w.s
	x, m, ok := member(s, callee)
	if ok && (m == "assign" || m == "replace") && isLocation(s, x, 0) {
		w.nav()
		return true
	}
	if w.withLoc {
		if v, isVar := callee.(*js.Var); isVar && (s.globalName(v) == "assign" || s.globalName(v) == "replace") {
			w.nav()
			return true
		}
	}
	if _, isOpen := isGlobalName(s, callee, "open"); isOpen && len(args) >= 2 {
		if t, exact := s.constant(args[1].Value); exact {
			switch strings.ToLower(strings.TrimSpace(t)) {
			case "_top", "_parent", "_self":
				w.nav()
				return true
			}
		}
	}
	if !ok {
		return false
	}
	if _, isR := isGlobalName(s, x, "Reflect"); isR && m == "set" && len(args) >= 2 {
		k, exact := s.constant(args[1].Value)
		if isLocation(s, args[0].Value, 0) && (!exact || navProps[k]) || isWindow(s, args[0].Value, 0) && (!exact || k == "location") {
			w.nav()
			return true
		}
	}
	if _, isO := isGlobalName(s, x, "Object"); isO && (m == "assign" || m == "defineProperty" || m == "defineProperties") && len(args) >= 2 {
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
func (w *walker) sinkCall(callee js.IExpr, args []js.Arg) bool {
	s := w.s
	switch {
	case w.isEval(callee):
		w.sink(sinkScript, args)
	case w.isFunctionCtor(callee):
		w.sink(sinkFunction, args)
	case w.isTimer(callee):
		w.sink(sinkTimer, args)
	case w.isWrite(callee):
		w.sink(sinkHTML, args)
	default:
		x, m, ok := member(s, callee)
		if ok && (m == "insertAdjacentHTML") && len(args) >= 2 {
			w.sinkValue(sinkHTML, args[1].Value)
			return true
		}
		if ok && (m == "setHTMLUnsafe" || m == "createContextualFragment") && len(args) >= 1 {
			w.sinkValue(sinkHTML, args[0].Value)
			return true
		}
		_ = x
		return false
	}
	return true
}

func (w *walker) isEval(e js.IExpr) bool {
	_, ok := isGlobalName(w.s, e, "eval", "execScript")
	return ok
}

// isFunctionCtor reports Function under any name: the global, or the
// constructor of a function (`(function(){}).constructor`,
// `x.constructor.constructor`).
func (w *walker) isFunctionCtor(e js.IExpr) bool {
	e = unwrap(e)
	if _, ok := isGlobalName(w.s, e, "Function"); ok {
		return true
	}
	x, m, ok := member(w.s, e)
	if !ok || m != "constructor" {
		return false
	}
	switch x := unwrap(x).(type) {
	case *js.FuncDecl, *js.ArrowFunc:
		return true
	case *js.DotExpr, *js.IndexExpr:
		_, m2, ok := member(w.s, x)
		return ok && m2 == "constructor"
	}
	return false
}

func (w *walker) isTimer(e js.IExpr) bool {
	_, ok := isGlobalName(w.s, e, "setTimeout", "setInterval", "setImmediate")
	return ok
}

// isWrite reports document.write and writeln, through document.open()'s
// result and inside with(document).
func (w *walker) isWrite(e js.IExpr) bool {
	s := w.s
	e = unwrap(e)
	if v, ok := e.(*js.Var); ok && w.withDoc {
		n := s.globalName(v)
		return n == "write" || n == "writeln"
	}
	x, m, ok := member(s, e)
	if !ok || (m != "write" && m != "writeln") {
		return false
	}
	return isDocument(s, x)
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

// tagged reads a tagged template: eval`...`, Function`...` run its text.
func (w *walker) tagged(n *js.TemplateExpr) {
	switch {
	case w.isEval(n.Tag):
		// eval of an array returns it: nothing runs.
	case w.isFunctionCtor(n.Tag), w.isTimer(n.Tag), w.isWrite(n.Tag):
		k := sinkFunction
		if w.isWrite(n.Tag) {
			k = sinkHTML
		}
		t := *n
		t.Tag = nil
		w.sinkValue(k, &t)
	}
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
	if !a.enter(depth) || a.done() {
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
func (w *walker) listener(callee js.IExpr, args []js.Arg) bool {
	s := w.s
	_, m, ok := member(s, callee)
	if !ok || len(args) == 0 {
		return false
	}
	var c jsCtx
	handlers := args
	switch m {
	case "addEventListener", "on", "one", "bind", "live", "attachEvent", "removeEventListener":
		ev, exact := s.constant(args[0].Value)
		if !exact {
			return false
		}
		c = eventsContext(lowerEvents(ev, m == "attachEvent"))
		w.walk(args[0].Value)
		handlers = args[1:]
	default:
		if !gestureEvents[strings.ToLower(m)] {
			return false
		}
		c = ctxGesture
	}
	hw := w.in(c)
	for _, a := range handlers {
		hw.walk(a.Value)
	}
	return true
}
