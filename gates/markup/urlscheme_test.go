package markup

import (
	"html"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sameURLSchemes fails when the schemeIs shortcut changes what
// javascriptURL or dataDocument give for u: what they give reading the
// cleaned URL, the reference; or when escapedHead, or InsecureURL's reading
// of "http:" and "https:" heads, changes what hasSchemeRef gives.
func sameURLSchemes(t *testing.T, u string) {
	t.Helper()
	code, ok := javascriptURL(u)
	wantCode, wantOK := cleanJavascriptURL(u)
	require.Equal(t, wantOK, ok, "%q", u)
	require.Equal(t, string(wantCode), string(code), "%q", u)
	doc, ok := dataDocument(u)
	wantDoc, wantOK := cleanDataDocument(u)
	require.Equal(t, wantOK, ok, "%q", u)
	require.Equal(t, string(wantDoc), string(doc), "%q", u)
	insecure := hasSchemeRef(u, "http:")
	require.Equal(t, insecure, hasScheme(u, "http:"), "%q", u)
	require.Equal(t, insecure, InsecureURL(u), "InsecureURL(%q)", u)
}

// hasSchemeRef is hasScheme as it was before escapedHead: the reference.
func hasSchemeRef(u, scheme string) bool {
	for i := 0; i <= maxEscapeLayers; i++ {
		if schemeIs(u, scheme) {
			return true
		}
		head := u
		if c := strings.IndexByte(u, ':'); c >= 0 {
			head = u[:c]
		}
		if strings.IndexByte(head, '&') < 0 && strings.IndexByte(head, '%') < 0 {
			return false
		}
		u = html.UnescapeString(percentDecode(u))
	}
	return false
}

// urlSchemeSpellings are the two schemes spelt every way the URL parser
// reads alike or nearly: case, Unicode folds (ſ, K), controls, spaces,
// tab, CR and LF around and inside, cut short.
func urlSchemeSpellings() []string {
	var out []string
	for _, base := range []string{"javascript:a()", "data:text/html,<script>a()</script>", "JavaScript:a()", "DATA:text/html;base64,PHA+", "https://x.example/",
		"http://x.example/?a=%68&b=&amp;", "h%74tp://x", "h&#116;tp://x", "ht&amp;#116;p:x", "h%2574tp://x", "&#104;ttp&colon;//x", "x/y%3A:http:",
		"HTTPS://x", "hTtPs:", "httpS:x", "http:", "HTTP:x", "https", "httpx:", "https%3A//x", "http&colon;//x", "httpss:", "http\u017f:"} {
		out = append(out, base, strings.ToUpper(base), "javaſcript:a()", "\u212aavascript:a()", "dat\u0430:text/html,x")
		for i := 0; i <= len(base); i++ {
			for _, ins := range []string{"\t", "\n", "\r", " ", "\x00", "\x01", "\x7f", "\u00a0", "%", "&"} {
				out = append(out, base[:i]+ins+base[i:], base[:i], ins+base[:i]+ins)
			}
		}
	}
	return out
}

func TestURLSchemeShortcut(t *testing.T) {
	for _, u := range append(urlSchemeSpellings(), testStrings(t)...) {
		sameURLSchemes(t, u)
	}
}

func FuzzURLSchemeShortcut(f *testing.F) {
	for _, u := range urlSchemeSpellings() {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) { sameURLSchemes(t, u) })
}
