package markup

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScriptReading covers what a parser gets right and a lexer got wrong:
// regex or division, nested templates, escapes, bracket names, scopes.
func TestScriptReading(t *testing.T) {
	f := func(js, want string) {
		t.Helper()
		require.Equal(t, want, verdict(Judge([]byte("<script>"+js+"</script>"), HTML, DefaultLimits)), js)
	}
	f(`if (a) /"/.test(b); top.location = u`, "forced redirect")          // a regex after a control paren
	f(`x = (a) / 2; y = "/"; top.location = u`, "forced redirect")        // division after a paren
	f(`x = {a: 1} / 2; s = '}'; top.location = u`, "forced redirect")     // division after an object literal
	f(`function f() {} /"/.test(x); top.location = u`, "forced redirect") // a regex after a block
	f(`return /[/"]/.test(x) && (top.location = u)`, "unreadable")        // return outside a function
	f("var t = `a${`b${eval(atob(x))}`}`", "decode-and-run")
	f("var t = `${'`'}`; top.location = u", "forced redirect")
	f(`top['\x6c\157cation'] = u`, "forced redirect")
	f(`top[/* c */ "location" /* d */] = u`, "forced redirect")
	f(`top[name] = u; top["location" + suffix] = u`, "pass")
	f(`const location = u; let {href} = location;`, "pass")
	f(`function f() { var location = u; location.href = v }`, "pass")
	f(`var location = u`, "forced redirect") // a top-level var is the window's property
	f(`loc\u0061tion.href = u`, "forced redirect")
	f(`s = 'it\'s'; top.location = u`, "forced redirect")
	f("s = 'line\\\ncontinued'; top.location = u", "forced redirect")
	f(`a = b ? top.location : c`, "pass")
	f(`a == top.location; b != window.location; c <= location; d >= location`, "pass")
	f(`x => top.location = u`, "forced redirect") // an arrow no one calls: its callers cannot be followed
	f(`setTimeout(x => atob(x)); setInterval(async function () { eval(p) })`, "pass")
	f(`setTimeout((a = atob(x)) => a)`, "pass")
	f(`setTimeout(atob(x)`, "unreadable") // cut off
	f(`document['write'](String.fromCharCode(60, x))`, "decode-and-run")
	f(`Function.apply(null, [decodeURIComponent(p)])`, "decode-and-run")
	f(`Reflect.apply(eval, null, [atob(p)])`, "decode-and-run")
	f(`eval(x) + atob(y)`, "pass")
	f(strings.Repeat("(", 100)+"eval(atob(x))"+strings.Repeat(")", 100), "decode-and-run")
	f("`${"+strings.Repeat("(", 100)+"1"+strings.Repeat(")", 100)+"}`; top.location = u", "forced redirect")
	f("`${"+strings.Repeat("(", 5000)+"1"+strings.Repeat(")", 5000)+"}`; top.location = u", "unreadable") // past the parser's nesting limit
	f(strings.Repeat("eval(", 40)+"atob(x)"+strings.Repeat(")", 40), "decode-and-run")
	f(`var w = window.top; w['loc' + 'ation'].replace(u)`, "forced redirect")
	f(`var d = document; d.location.href = u`, "forced redirect")
	f(`top.location.hash = 'x'`, "pass") // scrolls, loads nothing
	f(`new Image().src = atob("aHR0cHM6Ly94")`, "pass")
	f(`eval(String.fromCharCode(116,111,112,46,108,111,99,97,116,105,111,110,61,117))`, "forced redirect")
	f(`setTimeout("top.location = u", 10)`, "forced redirect")
	f(`document.addEventListener('click', () => setTimeout(() => { top.location = u }, 10))`, "pass") // the timer keeps the gesture
	f(`document.addEventListener('visibilitychange', () => { top.location = u })`, "forced redirect")
	f(`for (top.location of [u]);`, "forced redirect")
	f(`({a: top.location} = {a: u})`, "forced redirect")
	f(`[top.location = d] = []`, "forced redirect")
	f(`top.location ??= u`, "forced redirect")
	f(`window.open(u)`, "pass")
	f(`open(u, "_parent")`, "forced redirect")
	f(`var t = "_top"; window.open(u, t)`, "forced redirect")
}

// TestThisAtTopLevel: at a script's top level (and in arrows there) this
// is the window; in a function, a method or a handler it is not known to
// be.
func TestThisAtTopLevel(t *testing.T) {
	f := func(adm, want string) {
		t.Helper()
		require.Equal(t, want, verdict(Judge([]byte(adm), HTML, DefaultLimits)), adm)
	}
	f(`<script>this.location = u</script>`, "forced redirect")
	f(`<script>this.top.location.href = u</script>`, "forced redirect")
	f(`<script>(() => { this.location = u })()</script>`, "forced redirect")
	f(`<script>function Slot() { this.location = "sidebar"; } new Slot();</script>`, "pass")
	f(`<script>var o = { m() { this.location = 1 } }</script>`, "pass")
	f(`<img src=x onerror="this.location = u">`, "pass")
	f(`<script>document.defaultView.location = u</script>`, "forced redirect")
}

// TestConstantBlowUp: a chain of bindings each doubling the last is
// evaluated once per binding, and past MaxDecodedBytes it is unreadable.
func TestConstantBlowUp(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<script>var v0 = "xxxxxxxx";`)
	for i := 1; i <= 40; i++ {
		b.WriteString("var v" + strconv.Itoa(i) + " = v" + strconv.Itoa(i-1) + " + v" + strconv.Itoa(i-1) + ";")
	}
	b.WriteString("eval(v40)</script>")
	require.Equal(t, "unreadable", verdict(Judge([]byte(b.String()), HTML, DefaultLimits)))
	require.Equal(t, "pass", verdict(Judge([]byte(`<script>var a = "x"; var b = a + a; var c = b + b; eval(c)</script>`), HTML, DefaultLimits)))
}

// TestInertBodies: reading an inert body in full finds nothing and notes
// no name, in every context, so skipping its parse changes no verdict.
func TestInertBodies(t *testing.T) {
	for _, b := range inertBodies {
		for _, c := range []jsCtx{ctxForced, ctxGesture, {kind: kFunc, fn: &jsFunc{}}} {
			a := newAnalysis(DefaultLimits, true, true)
			a.parseAndRun([]byte(" "+b+"\n"), c, true, 0)
			require.Equal(t, Finding(0), a.result(), b)
			require.False(t, a.insecure, b)
			require.Empty(t, a.refs, b)
			require.Empty(t, a.funcs, b)
			if c.fn != nil {
				require.Equal(t, jsFunc{}, *c.fn, b)
			}
		}
		require.True(t, inert([]byte("\t"+b+" ")), b)
	}
	require.False(t, inert([]byte("void(0)+top.location=u")))
	for _, b := range []string{"\u0085void(0)", "void(0)\u00a0", "void(0)\u2028"} {
		require.False(t, inert([]byte(b)), "%q", b)
	}
	require.Equal(t, "unreadable", verdict(Judge([]byte("<a href=\"javascript:\u0085void(0)\">x</a>"), HTML, DefaultLimits)))
	require.False(t, inert([]byte("return false; top.location=u")))
}

// TestBlankScripts: a script of ECMAScript white space and line
// terminators only runs nothing and is not read; one of other Unicode
// spaces (a lone U+0085, which bytes.TrimSpace would call blank) does not
// parse in a browser and is Unreadable, as any script that does not parse.
func TestBlankScripts(t *testing.T) {
	for _, s := range []string{"", " \t\n\r\v\f", "\u00a0\ufeff\u2028\u2029\u3000", "\u1680\u2000\u200a\u202f\u205f"} {
		require.True(t, jsBlank([]byte(s)), "%q", s)
		require.Equal(t, Finding(0), Judge([]byte("<script>"+s+"</script>"), HTML, DefaultLimits), "%q", s)
	}
	for _, s := range []string{"\u0085", " \u0085 ", "\u200b", ";"} {
		require.False(t, jsBlank([]byte(s)), "%q", s)
	}
	require.Equal(t, "unreadable", verdict(Judge([]byte("<script>\u0085</script>"), HTML, DefaultLimits)))
	require.Equal(t, "unreadable", verdict(Judge([]byte(`<img src=x onerror="`+"\u0085"+`">`), HTML, DefaultLimits)))
}
