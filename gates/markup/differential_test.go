package markup

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tdewolff/parse/v2/js"
	"golang.org/x/net/html"
)

// differentialHTML are documents whose scripts sit where tokenizers
// disagree with tree construction: foreign content, breakout elements,
// raw text, noscript, templates, tables, misnested tags.
var differentialHTML = []string{
	`<svg><style><img src=x onerror="a()"></style><script>b&#40;)</script></svg>`,
	`<svg><title><img src=x onload="c()"></title><desc><p onclick="d()">x</p></desc></svg>`,
	`<math><mtext><table><mglyph><style><img src=x onerror="e()"></style></mglyph></table></mtext></math>`,
	`<noscript><p title="</noscript><img src=x onerror=f()>"></noscript>`,
	`<template><script>g()</script><div onmouseover="h()"></div></template>`,
	`<table><tr><script>i()</script><td onclick="j()">x</td></tr><b onload="k()"></table>`,
	`<script><!--<script></script>l()</script><p onclick="m()">`,
	`<textarea><script>never()</script></textarea><xmp><img onerror=never()></xmp><p onfocus="n()">`,
	`<iframe srcdoc="&lt;script&gt;o()&lt;/script&gt;"></iframe><a href="javascript:p()">x</a>`,
	`<select><option><script>q()</script><img onerror="r()"></select>`,
	`<svg><foreignObject><div onclick="s()"><script>t()</script></div></foreignObject></svg>`,
	`<![CDATA[<script>u()</script>]]><!-- <script>never()</script> --><script type="text/plain">never()</script>`,
	`<p><svg><p><script>v()</script>`,
}

// referenceScripts walks x/net/html's tree of doc (with scripting, as the
// reader does) and lists every script a browser runs: script elements of a
// JavaScript type, on* handlers, javascript: hrefs, and those of srcdoc and
// noscript documents.
func referenceScripts(t *testing.T, doc string) []string {
	t.Helper()
	root, err := html.ParseWithOptions(strings.NewReader(doc), html.ParseOptionEnableScripting(true))
	require.NoError(t, err)
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for ; n != nil; n = n.NextSibling {
			if n.Type == html.ElementNode {
				if n.Data == "script" && runsAsScript(n) {
					if s := string(childText(n)); strings.TrimSpace(s) != "" {
						out = append(out, s)
					}
				}
				if n.Data == "noscript" && n.Namespace == "" {
					out = append(out, referenceScripts(t, string(childText(n)))...)
				}
				for _, a := range n.Attr {
					switch {
					case a.Namespace == "" && strings.HasPrefix(a.Key, "on"):
						out = append(out, a.Val)
					case a.Key == "srcdoc":
						out = append(out, referenceScripts(t, a.Val)...)
					case a.Key == "href" && strings.HasPrefix(a.Val, "javascript:"):
						out = append(out, strings.TrimPrefix(a.Val, "javascript:"))
					}
				}
			}
			walk(n.FirstChild)
		}
	}
	walk(root)
	return out
}

// TestHTMLAgainstTree checks that the HTML reader reads exactly the scripts
// x/net/html's tree holds.
func TestHTMLAgainstTree(t *testing.T) {
	for _, doc := range differentialHTML {
		var got []string
		a := newAnalysis(DefaultLimits, true, false)
		a.observe = func(src []byte, _ bool) { got = append(got, string(src)) }
		a.read([]byte(doc), HTML)
		want := referenceScripts(t, doc)
		sort.Strings(got)
		sort.Strings(want)
		require.Equal(t, want, got, doc)
		require.NotContains(t, strings.Join(got, ";"), "never", doc)
	}
}

// TestScriptAgainstAST checks that the script reader walks the whole syntax
// tree: every global name the parser resolves (a Var with no declaration)
// is one the reader saw referenced.
func TestScriptAgainstAST(t *testing.T) {
	for _, src := range []string{
		`function f(a = g1()) { return class { [g2()] = g3; m() { g4(); } static { g5(); } }; } f();`,
		`for (const k in g6) { label: while (g7) { switch (g8) { case g9: g10(); } } } try { g11 } catch ({e = g12}) {} finally { g13 }`,
		"var t = g14`x${g15}`; var o = {[g16]: g17, ...g18, get p() { return g19 }}; var [x = g20, ...r] = g21;",
		`el.addEventListener("click", () => g22()); el.onload = function () { g23(); }; $(g24).click(function () { g25 });`,
		`with (g26) { g27 } if (g28) g29; else g30; do g31(); while (g32); new g33(g34); g35?.[g36]?.(g37);`,
		`async function* gen() { yield g38; await g39; } (function () { g40 })(); x => g41; async () => g42;`,
	} {
		ast, err := parseJS([]byte(src), false)
		require.NoError(t, err, src)
		var want []string
		js.Walk(globalVars{&want}, ast)
		a := newAnalysis(DefaultLimits, true, false)
		a.readScript([]byte(src), ctxForced, false, 0)
		for _, name := range want {
			if strings.HasPrefix(name, "g") {
				_, ok := a.refs[name]
				require.True(t, ok, "%s not seen in %s", name, src)
			}
		}
		require.NotEmpty(t, want)
	}
}

type globalVars struct{ names *[]string }

func (g globalVars) Enter(n js.INode) js.IVisitor {
	if v, ok := n.(*js.Var); ok && root(v).Decl == js.NoDecl {
		*g.names = append(*g.names, string(bytes.Clone(v.Data)))
	}
	return g
}

func (globalVars) Exit(js.INode) {}

// observed lists the scripts a reading of doc reads, by tree or by tokens.
func observed(doc []byte, tree bool) []string {
	var got []string
	a := newAnalysis(DefaultLimits, true, false)
	a.observe = func(src []byte, _ bool) { got = append(got, string(src)) }
	if tree {
		a.readTree(doc, 0)
	} else {
		a.readTokens(doc, 0)
	}
	sort.Strings(got)
	return got
}

// tokensCoverTree checks that the token reading reads every script the
// tree reading does (it may read more: elements the tree drops).
func tokensCoverTree(t *testing.T, doc []byte) {
	t.Helper()
	tokens := map[string]int{}
	for _, s := range observed(doc, false) {
		tokens[s]++
	}
	for _, s := range observed(doc, true) {
		if tokens[s] == 0 {
			t.Fatalf("tree reads %q, tokens do not, in %q", s, doc)
		}
		tokens[s]--
	}
}

// TestTokensAgainstTree checks the tokenizer path on markup without
// foreign content or noscript against tree construction.
func TestTokensAgainstTree(t *testing.T) {
	for _, doc := range []string{
		`<table><tr><script>a()</script><td onclick="b()">x</td></tr><b onload="c()"></table>`,
		`<script><!--<script></script>d()</script><p onclick="e()">`,
		`<textarea><script>never()</script></textarea><xmp><img onerror=never()></xmp><p onfocus="f()">`,
		`<select><option><script>g()</script><img onerror="h()"></select>`,
		`<frameset onload="i()"><frame src="javascript:j()"></frameset><script>k()</script>`,
		`<html onload="l()"><body onload="m()"><body onclick="n()"><template><script>o()</script></template>`,
		`<![CDATA[<script>p()</script>]]><!-- <script>never()</script> --><script type="text/plain">never()</script>`,
		`<iframe><script>never()</script></iframe><noembed><img onerror=never()></noembed><plaintext><script>never()`,
		`<sCript/>q()</script><style/>*{background:url(r)}</style>`, // found by FuzzHTML: the self-closing flag is ignored
	} {
		require.False(t, needsTree([]byte(doc)), doc)
		tokensCoverTree(t, []byte(doc))
		require.NotContains(t, strings.Join(observed([]byte(doc), false), ";"), "never", doc)
	}
	require.True(t, needsTree([]byte(`<p><SVG>`)))
	require.True(t, needsTree([]byte(`<NoScript>`)))
}
