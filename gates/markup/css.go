package markup

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/css"
)

// CSS is read with tdewolff/parse/v2/css, a CSS Syntax Level 3 tokenizer.
// The URLs a style sheet loads are the url() values, the strings of
// @import, and the strings of image-set() (and its -webkit- twin).

// readCSS checks the URLs that CSS loads (for Insecure).
func (a *analysis) readCSS(src []byte) {
	for _, u := range cssURLs(src) {
		if InsecureURL(u) {
			a.insecure = true
			return
		}
	}
}

// cssURLs returns the URLs CSS loads, CSS escapes undone.
func cssURLs(src []byte) []string {
	// Every URL sits in a function or url token, which a '(' opens, or
	// follows an @import, which an '@' opens (an escape makes neither):
	// CSS without both loads nothing and is not tokenized.
	if bytes.IndexByte(src, '(') < 0 && bytes.IndexByte(src, '@') < 0 {
		return nil
	}
	return lexCSSURLs(src)
}

// lexCSSURLs is cssURLs through the CSS tokenizer.
func lexCSSURLs(src []byte) []string {
	buf := make([]byte, len(src), len(src)+1)
	copy(buf, src)
	l := css.NewLexer(parse.NewInputBytes(buf))
	var out []string
	var fn []string // the open functions, by unescaped lower-case name
	importNext := false
	var raw strings.Builder // an url( function's argument, when the lexer split it
	for {
		tt, data := l.Next()
		switch tt {
		case css.ErrorToken:
			if len(fn) > 0 && fn[len(fn)-1] == "url" && raw.Len() > 0 {
				out = append(out, strings.TrimSpace(raw.String()))
			}
			return out
		case css.URLToken, css.BadURLToken:
			// A bad url() loads nothing; it is read anyway, as one spelling
			// away from loading.
			out = append(out, urlTokenValue(data))
		case css.FunctionToken:
			name := strings.ToLower(cssUnescape(string(data[:len(data)-1])))
			fn = append(fn, name)
			raw.Reset()
		case css.LeftParenthesisToken:
			fn = append(fn, "")
		case css.RightParenthesisToken:
			if len(fn) > 0 {
				if fn[len(fn)-1] == "url" && raw.Len() > 0 {
					out = append(out, strings.TrimSpace(raw.String()))
				}
				fn = fn[:len(fn)-1]
			}
			raw.Reset()
		case css.AtKeywordToken:
			importNext = strings.EqualFold(cssUnescape(string(data[1:])), "import")
			continue
		case css.StringToken, css.BadStringToken:
			top := ""
			if len(fn) > 0 {
				top = fn[len(fn)-1]
			}
			if importNext || top == "url" || top == "image-set" || top == "-webkit-image-set" || top == "image" {
				out = append(out, cssString(data))
				if top == "url" {
					raw.Reset()
					fn[len(fn)-1] = "url-done"
				}
			}
		case css.WhitespaceToken, css.CommentToken:
			continue
		default:
			if len(fn) > 0 && fn[len(fn)-1] == "url" {
				raw.WriteString(cssUnescape(string(data)))
			}
		}
		importNext = false
	}
}

// urlTokenValue is the URL of an url(...) token, escapes undone.
func urlTokenValue(data []byte) string {
	s := string(data)
	if i := strings.IndexByte(s, '('); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSuffix(s, ")")
	s = strings.Trim(s, htmlSpace)
	if len(s) > 0 && (s[0] == '"' || s[0] == '\'') {
		return cssString([]byte(s))
	}
	return cssUnescape(s)
}

// cssString evaluates a CSS string token (quotes included).
func cssString(data []byte) string {
	s := string(data)
	if len(s) > 0 && (s[0] == '"' || s[0] == '\'') {
		q := s[0]
		s = s[1:]
		if len(s) > 0 && s[len(s)-1] == q {
			s = s[:len(s)-1]
		}
	}
	return cssUnescape(s)
}

// cssUnescape undoes CSS escapes: a backslash and 1 to 6 hex digits (one
// white space after them is part of the escape), a backslash-newline
// (nothing), or a backslash and any other character (that character).
func cssUnescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		if !isHex(s[i]) {
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		var r rune
		j := i
		for ; j < len(s) && j < i+6 && isHex(s[j]); j++ {
			r = r<<4 | rune(unhex(s[j]))
		}
		if j < len(s) && strings.IndexByte(htmlSpace, s[j]) >= 0 {
			if s[j] == '\r' && j+1 < len(s) && s[j+1] == '\n' {
				j++
			}
			j++
		}
		if r == 0 || r > 0x10FFFF || (r >= 0xD800 && r < 0xE000) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		i = j - 1
	}
	return b.String()
}
