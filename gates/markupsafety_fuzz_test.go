package gates

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bidguard/bidguard/gates/markup"
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

// judge reads adm as a banner (HTML), with the default limits.
func judge(adm []byte) markup.Finding { return markup.Judge(adm, markup.HTML, markup.DefaultLimits) }

// FuzzMarkupSafety checks, on any valid UTF-8 input (the gate rejects the
// rest before reading):
//   - reading never panics, under every reading, and is deterministic;
//   - inert places stay inert: the input as a string literal, in a comment,
//     as text, or as an alt attribute finds nothing;
//   - code after those places is still read: a redirect placed after the
//     input in each of them is found;
//   - markup written by document.write is read as markup: a redirect the
//     input holds as markup is found when a constant write writes it.
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
		if !utf8.ValidString(s) {
			return
		}
		b := []byte(s)
		got := judge(b)
		if judge(b) != got {
			t.Fatalf("not deterministic: %q", s)
		}
		markup.Judge(b, markup.VAST, markup.DefaultLimits)
		markup.Judge(b, markup.Native, markup.DefaultLimits)
		markup.Judge(b, markup.Sniff(b), markup.DefaultLimits)

		const redirect = `; top.location = "https://scam.example/";`
		places := []struct{ name, inert string }{
			{"string", `<script>var s = "` + jsStringBody(s) + `"`},
			{"line comment", "<script>// " + drop(s, "\n\r<\u2028\u2029") + "\n"},
			{"block comment", "<script>/* " + dropAll(drop(s, "<"), "*/") + " */"},
			{"text", "<p>" + drop(s, "<") + "</p><script>"},
			{"alt", `<img alt="` + drop(s, `"`) + `"><script>`},
		}
		if got&(markup.ForcedRedirect|markup.Unreadable) == markup.ForcedRedirect {
			if f := judge([]byte(`<script>document.write("` + jsStringBody(s) + `")</script>`)); f&(markup.ForcedRedirect|markup.Unreadable) == 0 {
				t.Fatalf("redirect in markup written by document.write not found: %q", s)
			}
		}
		for _, p := range places {
			if f := judge([]byte(p.inert + "</script>")); f != 0 {
				t.Fatalf("%s: found %b in %q", p.name, f, p.inert)
			}
			if f := judge([]byte(p.inert + redirect + "</script>")); f&markup.ForcedRedirect == 0 {
				t.Fatalf("%s: redirect after %q not found", p.name, p.inert)
			}
		}
	})
}
