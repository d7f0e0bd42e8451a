package markup

import (
	"encoding/base64"
	"html"
	"net/url"
	"strings"
)

// hasScheme reports whether the URL u has the scheme (lower case, with its
// ':'), as the WHATWG URL parser reads it: leading and trailing C0 controls
// and spaces are stripped, tab, CR and LF removed anywhere, the scheme
// compared without case. Character references and percent-encoding are
// undone first, layer after layer (at most maxEscapeLayers): no encoding
// hides a scheme.
func hasScheme(u, scheme string) bool {
	for i := 0; i <= maxEscapeLayers; i++ {
		if schemeIs(u, scheme) {
			return true
		}
		if !escapedHead(u) {
			return false
		}
		u = html.UnescapeString(percentDecode(u))
	}
	return false
}

// escapedHead reports a '&' or '%' in u before its first ':' (anywhere
// when it has none): escapes after the first ':' cannot change the scheme.
// One pass that stops at the first of the three, where a scheme (https)
// ends after a few bytes.
func escapedHead(u string) bool {
	for i := 0; i < len(u); i++ {
		switch u[i] {
		case ':':
			return false
		case '&', '%':
			return true
		}
	}
	return false
}

// maxEscapeLayers bounds how many layers of character references and
// percent-encoding are undone in a URL's scheme.
const maxEscapeLayers = 4

// schemeIs compares u's scheme as the URL parser reads it (leading C0
// controls and spaces skipped, tab, CR and LF ignored) with scheme, without
// case. It allocates nothing.
func schemeIs(u, scheme string) bool {
	i := 0
	for i < len(u) && u[i] <= ' ' {
		i++
	}
	k := 0
	for ; i < len(u) && k < len(scheme); i++ {
		c := u[i]
		if c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != scheme[k] {
			return false
		}
		k++
	}
	return k == len(scheme)
}

// cleanURL is u as the URL parser keeps it: surrounding C0 controls and
// spaces stripped, tab, CR and LF removed.
func cleanURL(u string) string {
	i, j := 0, len(u)
	for i < j && u[i] <= ' ' {
		i++
	}
	for j > i && u[j-1] <= ' ' {
		j--
	}
	u = u[i:j]
	if strings.IndexByte(u, '\t') >= 0 || strings.IndexByte(u, '\n') >= 0 || strings.IndexByte(u, '\r') >= 0 {
		u = urlNewlines.Replace(u)
	}
	return u
}

// urlNewlines removes what the URL parser strips from anywhere in a URL.
var urlNewlines = strings.NewReplacer("\t", "", "\n", "", "\r", "")

// javascriptURL returns the script a javascript: URL runs: what follows the
// scheme, percent-decoded as the browser does before running it.
func javascriptURL(u string) ([]byte, bool) {
	// schemeIs finds what cleaning and comparing find, without reading the
	// whole URL three times (most URLs are not javascript: URLs).
	if !schemeIs(u, "javascript:") {
		return nil, false
	}
	return cleanJavascriptURL(u)
}

// cleanJavascriptURL is javascriptURL read from the cleaned URL.
func cleanJavascriptURL(u string) ([]byte, bool) {
	u = cleanURL(u)
	if len(u) < len("javascript:") || !strings.EqualFold(u[:len("javascript:")], "javascript:") {
		return nil, false
	}
	return []byte(percentDecode(u[len("javascript:"):])), true
}

// dataDocument returns the document a data: URL holds when a frame would
// render it as HTML or SVG (any other type shows no script).
func dataDocument(u string) ([]byte, bool) {
	if !schemeIs(u, "data:") { // as in javascriptURL
		return nil, false
	}
	return cleanDataDocument(u)
}

// cleanDataDocument is dataDocument read from the cleaned URL.
func cleanDataDocument(u string) ([]byte, bool) {
	u = cleanURL(u)
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return nil, false
	}
	meta, body, ok := strings.Cut(u[5:], ",")
	if !ok {
		return nil, false
	}
	params := strings.Split(meta, ";")
	mt := strings.ToLower(strings.TrimSpace(params[0]))
	if mt != "" && mt != "text/html" && mt != "image/svg+xml" && mt != "application/xhtml+xml" && mt != "text/xml" && mt != "application/xml" {
		return nil, false
	}
	body = percentDecode(body)
	if strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64") {
		b, err := base64.StdEncoding.DecodeString(stripSpace(body))
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(stripSpace(body), "="))
		}
		if err != nil {
			return []byte(body), true // undecodable: read what is there
		}
		return b, true
	}
	return []byte(body), true
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' {
			return -1
		}
		return r
	}, s)
}

// percentDecode undoes %XX (an invalid escape stays as written), as the
// URL parser's percent-decode does.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	if d, err := url.PathUnescape(s); err == nil {
		return d
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

// srcsetURLs returns the URLs of a srcset value (HTML's "parse a srcset
// attribute": candidates split at commas, a URL runs to white space, a
// comma inside a descriptor's parentheses splits nothing).
func srcsetURLs(v string) []string {
	var out []string
	for i := 0; i < len(v); {
		for i < len(v) && (strings.IndexByte(htmlSpace, v[i]) >= 0 || v[i] == ',') {
			i++
		}
		if i >= len(v) {
			break
		}
		s := i
		for i < len(v) && strings.IndexByte(htmlSpace, v[i]) < 0 {
			i++
		}
		u := v[s:i]
		if strings.HasSuffix(u, ",") {
			out = append(out, strings.TrimRight(u, ","))
			continue
		}
		out = append(out, u)
		i = descriptorEnd(v, i)
	}
	return out
}

// descriptorEnd returns the index after the comma that ends the srcset
// candidate's descriptors from i (a comma inside parentheses does not).
func descriptorEnd(v string, i int) int {
	paren := false
	for ; i < len(v); i++ {
		switch v[i] {
		case '(':
			paren = true
		case ')':
			paren = false
		case ',':
			if !paren {
				return i + 1
			}
		}
	}
	return i
}
