package gates

import (
	"strings"
	"testing"
)

// jsStringBody escapes s as the body of a double-quoted JavaScript string
// inside a <script> element.
func jsStringBody(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '<':
			b.WriteString(`\x3c`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// regexBody escapes s as the body of a regular expression literal.
func regexBody(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '/', '[', ']':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n', '\r', '<':
		case 0xe2: // U+2028 and U+2029 end a line, and with it the literal
			if strings.HasPrefix(s[i:], "\u2028") || strings.HasPrefix(s[i:], "\u2029") {
				i += 2
				continue
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// dropAll removes sub from s until none is left ("**//" holds one "*/"
// once the first is gone).
func dropAll(s, sub string) string {
	for strings.Contains(s, sub) {
		s = strings.ReplaceAll(s, sub, "")
	}
	return s
}

func drop(s, chars string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(chars, r) {
			return -1
		}
		return r
	}, s)
}

// FuzzMarkupSafety checks, on any input:
//   - scanning never panics, in every mode, and is deterministic;
//   - inert places stay inert: the input as a string literal, in a comment,
//     in a regular expression, as text, or as an alt attribute finds nothing;
//   - code after those places is still read: a redirect placed after the
//     input in each of them is found.
func FuzzMarkupSafety(f *testing.F) {
	for _, s := range []string{
		bannerHTML, adServerTag, vast2, vast4, native11, htmlResourceVAST,
		`top.location='x'`, `eval(atob(x))`, `"`, `'`, "`${", `/*`, `*/`, `//`, "\n", `\`, `</script>`, `[`, `/[/]/`,
		`<a href="java&#x09;script:x">`, `<meta http-equiv=refresh>`, `<iframe srcdoc="&lt;script&gt;location=1">`,
		`{"link":{"url":"javascript:x"},"jstracker":"<script>top.location=1<\/script>"}`, `\u0065val(atob(x))`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		got := unsafeAdm(b)
		if unsafeAdm(b) != got {
			t.Fatalf("not deterministic: %q", s)
		}
		unsafeMarkup(b, true, 0)
		unsafeMarkup(b, false, 0)
		unsafeNative(b, 0)
		scanJS(b, 0, 0)
		scanJS(b, escEntity|escJSON, 0)

		const redirect = `; top.location = "https://scam.example/";`
		places := []struct{ name, inert string }{
			{"string", `<script>var s = "` + jsStringBody(s) + `"`},
			{"line comment", "<script>// " + drop(s, "\n\r<\u2028\u2029") + "\n"},
			{"block comment", "<script>/* " + dropAll(drop(s, "<"), "*/") + " */"},
			{"regex", "<script>var r = /a" + regexBody(s) + "/g"},
			{"text", "<p>" + drop(s, "<") + "</p><script>"},
			{"alt", `<img alt="` + drop(s, `"`) + `"><script>`},
		}
		// What a call runs or writes is read as if it stood there: a
		// redirect the input holds as markup (or as script) is found when
		// document.write writes it (or eval runs it).
		if unsafeMarkup(b, false, 1)&jsRedirect != 0 {
			if f := unsafeAdm([]byte(`<script>document.write("` + jsStringBody(s) + `")</script>`)); f&jsRedirect == 0 {
				t.Fatalf("redirect in markup written by document.write not found: %q", s)
			}
		}
		if scanJS(b, 0, 1)&jsRedirect != 0 {
			if f := unsafeAdm([]byte(`<script>eval("` + jsStringBody(s) + `")</script>`)); f&jsRedirect == 0 {
				t.Fatalf("redirect in script run by eval not found: %q", s)
			}
		}
		for _, p := range places {
			if f := unsafeAdm([]byte(p.inert + "</script>")); f != 0 {
				t.Fatalf("%s: found %b in %q", p.name, f, p.inert)
			}
			if f := unsafeAdm([]byte(p.inert + redirect + "</script>")); f&jsRedirect == 0 {
				t.Fatalf("%s: redirect after %q not found", p.name, p.inert)
			}
		}
	})
}
