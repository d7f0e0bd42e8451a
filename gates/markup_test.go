package gates

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tokens renders every token of s as "kind:name:data" with attributes as
// name=value (value "<nil>" when absent), for compact assertions.
func tokens(s string, xml bool) []string {
	names := [...]string{"eof", "text", "start", "end", "comment", "cdata", "decl", "raw"}
	var t markupTokenizer
	t.reset([]byte(s), xml)
	var out []string
	for k := t.next(); k != markupEOF; k = t.next() {
		x := names[k] + ":" + string(t.name) + ":" + string(t.data)
		if k == markupStartTag {
			for {
				n, v, ok := t.nextAttr()
				if !ok {
					break
				}
				if v == nil {
					x += " " + string(n) + "=<nil>"
				} else {
					x += " " + string(n) + "=" + string(v)
				}
			}
			if t.selfClosing {
				x += " /"
			}
		}
		out = append(out, x)
	}
	return out
}

func TestMarkupTokenizer(t *testing.T) {
	f := func(s string, xml bool, want ...string) {
		t.Helper()
		require.Equal(t, want, tokens(s, xml), "%q", s)
	}
	f(`<div class="ad"><img src="a.png" alt='x > y' hidden></div>`, false,
		"start:div: class=ad", "start:img: src=a.png alt=x > y hidden=<nil>", "end:div:")
	// Unquoted values, spaces around '=', slashes, a leading '=' in a name.
	f(`<img src = a.png/ width=1/>`, false, "start:img: src=a.png/ width=1/")
	f(`<br/><img/src=x =y>`, false, "start:br: /", "start:img: src=x =y=<nil>")
	// A '<' that starts no markup is text; a tag cut off by the end keeps
	// what it holds, an unclosed quote running to the end.
	f(`a < b <3 <img src="http://x"`, false, "text::a < b <3 ", "start:img: src=http://x")
	f(`<img src="http://x>`, false, "start:img: src=http://x>")
	f(`<img src=`, false, "start:img: src=<nil>")
	f(`<img src=x`, false, "start:img: src=x")
	f(`<img a="1"`, false, "start:img: a=1")
	f(`<script`, false, "start:script:")
	f(`</p`, false, "end:p:")
	f(`x<`, false, "text::x<")
	f(`< MediaFile>x< /MediaFile>`, true, "text::< MediaFile>x< /MediaFile>")
	// Comments, including the abrupt forms, and bogus comments.
	f(`<!-- a --><!--><!---><!-- b --!>c`, false, "comment:: a ", "comment::", "comment::", "comment:: b ", "text::c")
	f(`<!-- open`, false, "comment:: open")
	f(`</ VideoClicks ></>`, false, "comment:: VideoClicks ", "comment::")
	// Declarations.
	f(`<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><p>`, false,
		`decl::DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"`, "start:p:")
	f(`<?xml version="1.0"?><VAST>`, true, `decl::xml version="1.0"`, "start:VAST:")
	f(`<?xml version="1.0"?><p>`, false, `comment::?xml version="1.0"?`, "start:p:")
	// CDATA is a section in XML and a bogus comment, to the first '>', in HTML.
	f(`<a><![CDATA[ x > <y> ]]></a>`, true, "start:a:", "cdata:: x > <y> ", "end:a:")
	f(`<![CDATA[ x > <img src=y> ]]>`, false, "comment::[CDATA[ x ", "text:: ", "start:img: src=y", "text:: ]]>")
	f(`<![CDATA[ open`, true, "cdata:: open")
	// Raw text elements in HTML end only at their own end tag.
	f(`<script>if (a<b) document.write("<img src=x>")</script ><p>`, false,
		"start:script:", `raw:script:if (a<b) document.write("<img src=x>")`, "end:script:", "start:p:")
	// A script's escaped states: "<!--<script>" makes the next "</script" part of the code.
	f("<script><!--<script></script>\nx()</script>y", false,
		"start:script:", "raw:script:<!--<script></script>\nx()", "end:script:", "text::y")
	f("<script><!--<script></script>--></script>y", false,
		"start:script:", "raw:script:<!--<script></script>-->", "end:script:", "text::y")
	f("<script><!--></script>y", false, "start:script:", "raw:script:<!-->", "end:script:", "text::y")
	f("<script><!-- <SCRIPT/x></scriptx></script>y</script>z", false,
		"start:script:", "raw:script:<!-- <SCRIPT/x></scriptx></script>y", "end:script:", "text::z")
	f("<noscript><p title=\"</noscript>\"></noscript>", false,
		"start:noscript:", `start:p: title=</noscript>`, "end:noscript:")
	f(`<STYLE>a{}</style>`, false, "start:STYLE:", "raw:STYLE:a{}", "end:style:")
	f(`<script>never closed <img src=x>`, false, "start:script:", "raw:script:never closed <img src=x>")
	f(`<title>a</titlex></title>`, false, "start:title:", "raw:title:a</titlex>", "end:title:")
	f(`<plaintext></plaintext><img>`, false, "start:plaintext:", "raw:plaintext:</plaintext><img>")
	// In XML nothing is raw text.
	f(`<style>a<b/></style>`, true, "start:style:", "text::a", "start:b: /", "end:style:")
	// More attributes than the tokenizer keeps spans for are parsed again.
	many, want := "<img", "start:img:"
	for i := 0; i < 20; i++ {
		many += fmt.Sprintf(" a%d='%d'", i, i)
		want += fmt.Sprintf(" a%d=%d", i, i)
	}
	f(many+" src=x>", false, want+" src=x")
	f(many+" src=x", false, want+" src=x")
	// A '>' inside a quoted value does not end the tag; end tags skip attributes.
	f(`<p title="a>b"></p class="x>">t`, false, "start:p: title=a>b", "end:p:", "text::t")
}

func TestMarkupKind(t *testing.T) {
	f := func(s string, wantXML, wantVAST bool) {
		t.Helper()
		xml, vast := markupKind([]byte(s))
		require.Equal(t, wantXML, xml, "xml: %q", s)
		require.Equal(t, wantVAST, vast, "vast: %q", s)
	}
	f(`<?xml version="1.0"?><VAST/>`, true, true)
	f("\xef\xbb\xbf <?xml version=\"1.0\"?><x/>", true, false)
	f(`<?xml version="1.0"?><!-- c --> <html><script>`, true, false)
	f(`<?xml version="1.0"?>`, true, false)
	f(`<!-- served by x --><VAST version="4.0">`, true, true)
	f(`<vast version="2.0">`, true, true)
	f(`<div><VAST>`, false, false)
	f(`text <VAST>`, false, false)
	f(``, false, false)
}

func TestMarkupNameIs(t *testing.T) {
	require.True(t, markupNameIs([]byte("SrC"), "src"))
	require.False(t, markupNameIs([]byte("sr"), "src"))
	require.False(t, markupNameIs([]byte("a\r"), "a-"))
	require.False(t, markupNameIs([]byte("[a"), "{a"))
}

func TestMarkupTokenizerLinear(t *testing.T) {
	// Inputs that would be quadratic under naive rescanning finish quickly:
	// the tests bound the work by construction (every loop advances).
	for _, s := range []string{
		strings.Repeat("<", 1<<16),
		strings.Repeat("<a ", 1<<15),
		strings.Repeat("<!--", 1<<15),
		"<script>" + strings.Repeat("</scrip", 1<<14),
		strings.Repeat(`<a b="`, 1<<14),
	} {
		for _, xml := range []bool{false, true} {
			var tk markupTokenizer
			tk.reset([]byte(s), xml)
			n := 0
			for tk.next() != markupEOF {
				n++
				require.Less(t, n, len(s)+1)
			}
		}
	}
}
