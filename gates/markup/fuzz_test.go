package markup

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// jsString is s as a double-quoted JavaScript string that a <script>
// element holds whole.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '<':
			b.WriteString(`\x3c`)
		case 0:
			b.WriteString(`\x00`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

const fuzzRedirect = `top.location = "https://scam.example/";`

// FuzzHTML reads any input as HTML: it never panics, is deterministic,
// splits tags as the tokenizer does (splitTag), and
// markup that holds a redirect still does when a constant document.write
// writes it.
func FuzzHTML(f *testing.F) {
	for _, s := range []string{
		`<script>top.location=u</script>`, `<svg><style><img src=x onerror="top.location=u">`, `<a href="javascript:go()">`,
		`<iframe srcdoc="&lt;script&gt;top.location=1&lt;/script&gt;">`, `<noscript><p title="</noscript><img src=x onerror=top.location=u>">`,
		`<math><mtext><table><mglyph><style><img src=x onerror=top.location=u>`, `<meta http-equiv=refresh content=0>`,
		`<script><!--<script></script>top.location=u</script>`, `<body onload="location.replace&lpar;u&rpar;">`,
		`<a b='>'c="'" =d/ e=f/><A HREF=x Href=javascript:top.location=u>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		b := []byte(s)
		splitsAsTokenizer(t, b)
		if !needsTree(b) {
			tokensCoverTree(t, b)
			readsAllAttrs(t, b)
		}
		got, insecure := Read(b, HTML, DefaultLimits)
		if g2, i2 := Read(b, HTML, DefaultLimits); g2 != got || i2 != insecure {
			t.Fatalf("not deterministic: %q", s)
		}
		if Judge(b, HTML, DefaultLimits) != got || Insecure(b, HTML, DefaultLimits) != insecure {
			t.Fatalf("Read disagrees with Judge and Insecure: %q", s)
		}
		if got&(ForcedRedirect|Unreadable) == ForcedRedirect {
			w := Judge([]byte("<script>document.write("+jsString(s)+")</script>"), HTML, DefaultLimits)
			if w&(ForcedRedirect|Unreadable) == 0 {
				t.Fatalf("redirect in markup written by document.write not found: %q", s)
			}
		}
		// As text or in a text attribute, nothing runs.
		text := strings.NewReplacer("<", "", "&", "").Replace(s)
		if f := Judge([]byte("<p>"+text+"</p><img alt=\""+strings.ReplaceAll(text, `"`, "")+"\">"), HTML, DefaultLimits); f != 0 {
			t.Fatalf("text read as code: %q", text)
		}
	})
}

// FuzzScript reads any input as script: a body inert skips reads as
// nothing in full; the input is inert in a string literal, and what
// follows the literal is still read; eval of a constant reads the code it
// runs as that code.
func FuzzScript(f *testing.F) {
	for _, s := range []string{
		fuzzRedirect, `a++ /1;top.location=u`, "`${`${top.location=u}`}`", `var w = top; w.location = u`,
		`eval(atob("dG9wLmxvY2F0aW9uPTE="))`, `(0,eval)(atob(x))`, `with(document){write(atob(x))}`, "x=`$", `/*`, `'`,
		`function f(location){location=1}`, `[top.location]=[u]`, `Reflect.set(top.location,'href',u)`,
		" void(0);\n", "\u0085return false",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return
		}
		b := []byte(s)
		if inert(b) {
			a := newAnalysis(DefaultLimits, true, true)
			a.parseAndRun(b, ctxForced, true, 0)
			if a.result() != 0 || len(a.refs) != 0 {
				t.Fatalf("inert body %q reads as %b, names %v", s, a.result(), a.refs)
			}
		}
		got := Judge([]byte("<script>"+strings.ReplaceAll(s, "<", "\\x3c")+"</script>"), HTML, DefaultLimits)
		Judge(b, HTML, DefaultLimits)
		lit := "<script>var s = " + jsString(s) + ";"
		if f := Judge([]byte(lit+"</script>"), HTML, DefaultLimits); f != 0 {
			t.Fatalf("string literal read as code (%b): %q", f, lit)
		}
		if f := Judge([]byte(lit+fuzzRedirect+"</script>"), HTML, DefaultLimits); f&ForcedRedirect == 0 {
			t.Fatalf("redirect after a string literal not found: %q", lit)
		}
		if !strings.Contains(s, "<") && got&(ForcedRedirect|Unreadable) == ForcedRedirect {
			if f := Judge([]byte("<script>eval("+jsString(s)+")</script>"), HTML, DefaultLimits); f&(ForcedRedirect|Unreadable) == 0 {
				t.Fatalf("redirect in code eval runs not found: %q", s)
			}
		}
	})
}

// FuzzCSS reads any input as a style sheet: the URLs are those the CSS
// tokenizer finds (also for CSS cssURLs does not tokenize), an http URL
// after it in a url() is found unless the input left a comment, string or function open.
func FuzzCSS(f *testing.F) {
	for _, s := range []string{`a{background:url(x)}`, `@import "x";`, `\000068ttp`, `image-set("a" 1x`, `/*`, `"`, `url(`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := cssURLs([]byte(s)), lexCSSURLs([]byte(s)); !slices.Equal(got, want) {
			t.Fatalf("%q: %q, tokenizer %q", s, got, want)
		}
		cssUnescape(s)
		clean := strings.Map(func(r rune) rune {
			if strings.ContainsRune(`/*"'()\{}@;`, r) {
				return -1
			}
			return r
		}, s)
		if !utf8.ValidString(clean) {
			return
		}
		u := cssURLs([]byte(".a{color:" + clean + "} .b{background:url(http://x.example/a.png)}"))
		found := false
		for _, x := range u {
			found = found || InsecureURL(x)
		}
		if !found {
			t.Fatalf("url after %q not found: %q", clean, u)
		}
	})
}

// FuzzVAST reads any input as VAST and, put in a MediaFile's CDATA after
// https:// (and after http://), is read as one secure (insecure) URL.
func FuzzVAST(f *testing.F) {
	for _, s := range []string{`<VAST><Ad><InLine><Impression>x</Impression></InLine></Ad></VAST>`, `<!DOCTYPE x [<!ENTITY a "b">]>`, `]]>`, `<?pi?>`, `&amp;`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		Read(b, VAST, DefaultLimits)
		Read(b, VAST|HTML, DefaultLimits)
		x := strings.NewReplacer("]", "", "\t", "", "\n", "", "\r", "").Replace(s)
		if !utf8.ValidString(x) {
			return
		}
		doc := func(u string) []byte {
			return []byte(`<VAST version="4.2"><Ad><InLine><Creatives><Creative><Linear><MediaFiles><MediaFile><![CDATA[` + u + `]]></MediaFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`)
		}
		if Insecure(doc("https://"+x), VAST, DefaultLimits) {
			t.Fatalf("https flagged: %q", x)
		}
		if !Insecure(doc("http://"+x), VAST, DefaultLimits) {
			t.Fatalf("http not flagged: %q", x)
		}
	})
}

// FuzzNative reads any input as native JSON and, as an imptracker after
// https:// (and http://), as one secure (insecure) URL.
func FuzzNative(f *testing.F) {
	for _, s := range []string{`{"native":{"imptrackers":["x"]}}`, `{"jstracker":"<script>top.location=1</script>"}`, `{`, `"\u0068ttp:"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		Read(b, Native, DefaultLimits)
		doc := func(u string) []byte {
			q, _ := json.Marshal(u)
			return []byte(`{"native":{"ver":"1.2","imptrackers":[` + string(q) + `],"link":{"url":"https://brand.example/"}}}`)
		}
		if Insecure(doc("https://"+s), Native, DefaultLimits) {
			t.Fatalf("https flagged: %q", s)
		}
		if !Insecure(doc("http://"+s), Native, DefaultLimits) {
			t.Fatalf("http not flagged: %q", s)
		}
	})
}
