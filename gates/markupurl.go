package gates

// URLs in markup: scheme matching with the WHATWG URL parser's whitespace
// rules, and iterators over the URLs of a srcset value and of CSS, reading
// through an escDecoder (markupdecode.go). Nothing here allocates or copies; every
// loop advances, and lookahead is bounded, so the cost is linear in the input.

// schemeMatch matches a URL's scheme one decoded byte at a time, as the WHATWG
// URL parser reads it: leading C0 controls and spaces are skipped, tab, CR and
// LF are ignored anywhere, letters compare without case. scheme is lower case
// and ends with ':'. The zero state is open; a match feeds bytes until done.
type schemeMatch struct {
	scheme string
	i      int
	state  int8 // 0 open, 1 matched, -1 not this scheme
	began  bool
}

// feed reads one decoded byte and reports whether the match is decided.
func (m *schemeMatch) feed(c byte) bool {
	if m.state != 0 {
		return true
	}
	if !m.began {
		if c <= ' ' {
			return false
		}
		m.began = true
	}
	if c == '\t' || c == '\n' || c == '\r' {
		return false
	}
	if markupLower(c) != m.scheme[m.i] {
		m.state = -1
		return true
	}
	m.i++
	if m.i == len(m.scheme) {
		m.state = 1
		return true
	}
	return false
}

// feedFrom feeds d's units from p until the match is decided or d ends.
func (m *schemeMatch) feedFrom(d *escDecoder, p int) bool {
	for p < len(d.s) {
		c, n := d.at(p)
		if m.feed(c) {
			return true
		}
		p = n
	}
	return m.state != 0
}

// hasScheme reports whether the URL d holds from p has the scheme.
func hasScheme(d *escDecoder, p int, scheme string) bool {
	m := schemeMatch{scheme: scheme}
	m.feedFrom(d, p)
	return m.state == 1
}

// srcsetURLs iterates over the image candidates of a srcset value (HTML's
// "parse a srcset attribute"): candidates are split at commas, a URL runs to
// whitespace, and a comma inside parentheses of a descriptor splits nothing.
type srcsetURLs struct {
	d escDecoder
	p int
}

// next returns the span of the next candidate's URL in d.s.
func (it *srcsetURLs) next() (start, end int, ok bool) {
	d, p := &it.d, it.p
	for p < len(d.s) {
		c, n := d.at(p)
		if !isHTMLSpace(c) && c != ',' {
			break
		}
		p = n
	}
	if p >= len(d.s) {
		it.p = p
		return 0, 0, false
	}
	start = p
	var last byte
	for p < len(d.s) {
		c, n := d.at(p)
		if isHTMLSpace(c) {
			break
		}
		last, p = c, n
	}
	end = p
	if last != ',' {
		paren := false
		for p < len(d.s) {
			c, n := d.at(p)
			p = n
			if c == '(' {
				paren = true
			} else if c == ')' {
				paren = false
			} else if c == ',' && !paren {
				break
			}
		}
	}
	it.p = p
	return start, end, true
}

// cssURLs iterates over the URLs a style sheet or a style attribute loads:
// the argument of each url( function, quoted or not, and the string of each
// @import. Comments and other strings are skipped; a backslash escapes the
// next character. d's layers must not include escCSS: the structure is read
// before CSS escapes are undone, except in the names url and @import
// (`u\72l(`); check each URL with escCSS added.
type cssURLs struct {
	d    escDecoder
	p    int
	prev byte // the unit before p, for the identifier boundary of "url("
}

// next returns the span of the next URL in d.s (the inside of its quotes
// when quoted).
func (it *cssURLs) next() (start, end int, ok bool) {
	d := &it.d
	names := escDecoder{s: d.s, flags: d.flags | escCSS}
	for it.p < len(d.s) {
		p := it.p
		c, n := d.at(p)
		if (c == 'u' || c == 'U' || c == '\\') && !isCSSIdent(it.prev) {
			if e := names.word(p, "url("); e >= 0 {
				return it.url(d.skipSpace(e))
			}
		}
		switch c {
		case '/':
			if d.word(n, "*") >= 0 {
				it.p, it.prev = d.skipComment(n), '/'
				continue
			}
		case '"', '\'':
			_, _, it.p = d.cssString(p)
			it.prev = c
			continue
		case '\\':
			it.p, it.prev = n, 'a'
			if n < len(d.s) {
				_, it.p = d.at(n)
			}
			continue
		case '@':
			e := names.word(n, "import")
			if e < 0 {
				break
			}
			if e < len(d.s) {
				if c2, _ := names.at(e); isCSSIdent(c2) {
					break
				}
			}
			e = d.skipSpace(e)
			if e < len(d.s) {
				if q, _ := d.at(e); q == '"' || q == '\'' {
					return it.url(e)
				}
			}
			it.p, it.prev = e, ' '
			continue
		}
		it.p, it.prev = n, c
	}
	return 0, 0, false
}

// url returns the URL that starts at p: a string, or an unquoted url(...)
// argument running to a space or ')'.
func (it *cssURLs) url(p int) (start, end int, ok bool) {
	d := &it.d
	if p < len(d.s) {
		if q, _ := d.at(p); q == '"' || q == '\'' {
			start, end, it.p = d.cssString(p)
			it.prev = q
			return start, end, true
		}
	}
	end = p
	for end < len(d.s) {
		c, n := d.at(end)
		if isHTMLSpace(c) || c == ')' {
			break
		}
		if c == '\\' && n < len(d.s) {
			_, n = d.at(n)
		}
		end = n
	}
	it.p, it.prev = end, 'a'
	return p, end, true
}

// word returns the index after the lower-case ASCII word at p, compared
// without case, or -1.
func (d *escDecoder) word(p int, w string) int {
	for i := 0; i < len(w); i++ {
		if p >= len(d.s) {
			return -1
		}
		c, n := d.at(p)
		if markupLower(c) != w[i] {
			return -1
		}
		p = n
	}
	return p
}

// skipComment returns the index after the "*/" that closes the CSS comment
// whose '*' is at p, or len(d.s).
func (d *escDecoder) skipComment(p int) int {
	_, p = d.at(p)
	var prev byte
	for p < len(d.s) {
		c, n := d.at(p)
		p = n
		if prev == '*' && c == '/' {
			return p
		}
		prev = c
	}
	return p
}

// cssString reads the CSS string whose quote is at p: it returns the span of
// its content and the index after it. A backslash escapes the next unit; an
// unescaped newline ends a (bad) string, as does the end of the input.
func (d *escDecoder) cssString(p int) (start, end, next int) {
	q, p := d.at(p)
	start = p
	for p < len(d.s) {
		c, n := d.at(p)
		switch c {
		case q:
			return start, p, n
		case '\n':
			return start, p, p
		case '\\':
			if n < len(d.s) {
				_, n = d.at(n)
			}
		}
		p = n
	}
	return start, p, p
}

func (d *escDecoder) skipSpace(p int) int {
	for p < len(d.s) {
		c, n := d.at(p)
		if !isHTMLSpace(c) {
			return p
		}
		p = n
	}
	return p
}

func isCSSIdent(c byte) bool {
	return isMarkupLetter(c) || c >= '0' && c <= '9' || c == '-' || c == '_' || c >= 0x80 || c == '\\'
}
